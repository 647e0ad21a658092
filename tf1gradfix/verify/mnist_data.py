"""Synthetic MNIST for both sides, and a model of TF 1.15's tutorial loader for the TF1 side.

There is no network here, and both loaders download: the original's
`input_data.read_data_sets` (tensorflow/examples/tutorials/mnist, which TF 2.21 does
not ship) and the migration's `tf.keras.datasets.mnist.load_data()`. Both sides get the
same raw arrays instead, MNIST's layout on a fixed generator of their own (never NumPy's
global one): uint8 images [n, 28, 28], each a class's template with noise, and uint8
labels, n a fraction of MNIST's 60,000 training and 10,000 test images
(`TF1GRADFIX_MNIST_SCALE`, default 0.1).

TF1 side: `tensorflow.examples.tutorials.mnist.input_data`, written from TF 1.15's
input_data.py over those arrays: `read_data_sets` (validation = the first
`validation_size` training images, one-hot labels as float64 rows, uint8 images scaled
by 1/255 into float32, `[n, 784]` unless `reshape=False`, fake data) and
`_DataSet.next_batch` (a shuffle at the first call; at an epoch's end the rest of it,
then the start of the next, shuffled). Each `_DataSet` reseeds NumPy's global generator
as TF1's `random_seed.get_seed` decided: with `seed`, else with the graph-level seed
the program set, else from the system (runner_common makes that the same on both
sides). The graph-level seed the runner sets is not the program's and is not used.
Departures: nothing is downloaded or printed (the "Extracting ..." lines are the
loader's, not the program's), and another `source_url` fails (only MNIST is here).

TF2 side: `tf.keras.datasets.mnist.load_data` returns copies of the raw arrays. (TF1's
arrays were read-only NumPy views of the files, and so are the model's.)
"""

from __future__ import annotations

import collections
import functools
import sys
import types
import weakref

import numpy

from tf1gradfix.verify import settings

SCALE_ENV = "TF1GRADFIX_MNIST_SCALE"
SOURCE_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
MAXINT32 = 2**31 - 1
MODULES = ("tensorflow.examples", "tensorflow.examples.tutorials", "tensorflow.examples.tutorials.mnist",
           "tensorflow.examples.tutorials.mnist.input_data")


@functools.lru_cache(maxsize=1)
def raw_arrays():
    """((train images, train labels), (test images, test labels)), as load_data gives them."""
    scale = float(settings.get(SCALE_ENV, "0.1"))
    rng = numpy.random.RandomState(1998)
    templates = rng.randint(0, 256, (10, 28, 28))

    def split(n):
        labels = rng.randint(0, 10, n)
        noise = rng.randint(0, 256, (n, 28, 28))
        images = numpy.where(rng.rand(n, 28, 28) < 0.7, templates[labels], noise)
        return images.astype(numpy.uint8), labels.astype(numpy.uint8)

    return split(max(1, round(60000 * scale))), split(max(1, round(10000 * scale)))


def load_data(path="mnist.npz"):
    """`tf.keras.datasets.mnist.load_data` on the synthetic arrays (fresh copies, as np.load gives)."""
    (images, labels), (test_images, test_labels) = raw_arrays()
    return (images.copy(), labels.copy()), (test_images.copy(), test_labels.copy())


def install_v2(tf) -> None:
    """The migration's side: Keras's MNIST is the synthetic one."""
    tf.keras.datasets.mnist.load_data = load_data


def install_v1(v1) -> None:
    """The original's side, once the runner has set its own graph-level seed: the tutorial
    module, importable and as `tf.examples`."""
    seeded_by_program: weakref.WeakSet = weakref.WeakSet()
    runner_graph = v1.get_default_graph()
    original_seed = v1.set_random_seed

    def set_random_seed(seed):
        original_seed(seed)
        seeded_by_program.add(v1.get_default_graph())

    v1.set_random_seed = v1.random.set_random_seed = set_random_seed

    def graph_seed():
        graph = v1.get_default_graph()
        return graph.seed if graph is not runner_graph or graph in seeded_by_program else None

    modules = [types.ModuleType(name) for name in MODULES]
    for parent, child in zip(modules, modules[1:]):
        parent.__path__ = []
        setattr(parent, child.__name__.rsplit(".", 1)[1], child)
    loader = modules[-1]
    for name, value in _loader(v1, graph_seed).items():
        setattr(loader, name, value)
    sys.modules.update({m.__name__: m for m in modules})
    if "examples" not in dir(v1):
        v1.examples = modules[0]


def numpy_seed(seed, graph_seed):
    """The seed TF 1.15's `_DataSet` gave `numpy.random.seed`: `seed1 if seed is None else
    seed2` of `random_seed.get_seed(seed)` (which never (0, 0): then seed2 is 2**31 - 1)."""
    if seed is None:
        return None if graph_seed is None else graph_seed % MAXINT32
    if graph_seed is not None and graph_seed % MAXINT32 == 0 and seed % MAXINT32 == 0:
        return MAXINT32
    return seed % MAXINT32


def _loader(v1, graph_seed) -> dict:
    """input_data.py of TF 1.15, reading the synthetic arrays for the files it would download."""
    Datasets = collections.namedtuple("_Datasets", ["train", "validation", "test"])

    def dense_to_one_hot(labels_dense, num_classes):
        num_labels = labels_dense.shape[0]
        index_offset = numpy.arange(num_labels) * num_classes
        labels_one_hot = numpy.zeros((num_labels, num_classes))
        labels_one_hot.flat[index_offset + labels_dense.ravel()] = 1
        return labels_one_hot

    class _DataSet(object):
        def __init__(self, images, labels, fake_data=False, one_hot=False, dtype=v1.float32, reshape=True,
                     seed=None):
            numpy.random.seed(numpy_seed(seed, graph_seed()))
            dtype = v1.as_dtype(dtype).base_dtype
            if dtype not in (v1.uint8, v1.float32):
                raise TypeError("Invalid image dtype %r, expected uint8 or float32" % dtype)
            if fake_data:
                self._num_examples = 10000
                self.one_hot = one_hot
            else:
                assert images.shape[0] == labels.shape[0], (
                    "images.shape: %s labels.shape: %s" % (images.shape, labels.shape))
                self._num_examples = images.shape[0]
                if reshape:
                    assert images.shape[3] == 1
                    images = images.reshape(images.shape[0], images.shape[1] * images.shape[2])
                if dtype == v1.float32:
                    images = images.astype(numpy.float32)
                    images = numpy.multiply(images, 1.0 / 255.0)
            self._images = images
            self._labels = labels
            self._epochs_completed = 0
            self._index_in_epoch = 0

        images = property(lambda self: self._images)
        labels = property(lambda self: self._labels)
        num_examples = property(lambda self: self._num_examples)
        epochs_completed = property(lambda self: self._epochs_completed)

        def next_batch(self, batch_size, fake_data=False, shuffle=True):
            if fake_data:
                fake_image = [1] * 784
                fake_label = [1] + [0] * 9 if self.one_hot else 0
                return [fake_image for _ in range(batch_size)], [fake_label for _ in range(batch_size)]
            start = self._index_in_epoch
            if self._epochs_completed == 0 and start == 0 and shuffle:
                perm0 = numpy.arange(self._num_examples)
                numpy.random.shuffle(perm0)
                self._images = self.images[perm0]
                self._labels = self.labels[perm0]
            if start + batch_size > self._num_examples:
                self._epochs_completed += 1
                rest_num_examples = self._num_examples - start
                images_rest_part = self._images[start:self._num_examples]
                labels_rest_part = self._labels[start:self._num_examples]
                if shuffle:
                    perm = numpy.arange(self._num_examples)
                    numpy.random.shuffle(perm)
                    self._images = self.images[perm]
                    self._labels = self.labels[perm]
                start = 0
                self._index_in_epoch = batch_size - rest_num_examples
                end = self._index_in_epoch
                images_new_part = self._images[start:end]
                labels_new_part = self._labels[start:end]
                return (numpy.concatenate((images_rest_part, images_new_part), axis=0),
                        numpy.concatenate((labels_rest_part, labels_new_part), axis=0))
            self._index_in_epoch += batch_size
            end = self._index_in_epoch
            return self._images[start:end], self._labels[start:end]

    def read_only(array):
        array.flags.writeable = False
        return array

    def read_data_sets(train_dir, fake_data=False, one_hot=False, dtype=v1.float32, reshape=True,
                       validation_size=5000, seed=None, source_url=SOURCE_URL):
        if fake_data:
            def fake():
                return _DataSet([], [], fake_data=True, one_hot=one_hot, dtype=dtype, seed=seed)
            return Datasets(train=fake(), validation=fake(), test=fake())
        if source_url and source_url != SOURCE_URL:
            raise ValueError(f"the verifier has MNIST only, not the data of {source_url}")
        (train_images, train_labels), (test_images, test_labels) = raw_arrays()
        train_images, test_images = (read_only(x.reshape(x.shape + (1,))) for x in (train_images, test_images))
        train_labels, test_labels = (read_only(y.copy()) for y in (train_labels, test_labels))
        if one_hot:
            train_labels, test_labels = dense_to_one_hot(train_labels, 10), dense_to_one_hot(test_labels, 10)
        if not 0 <= validation_size <= len(train_images):
            raise ValueError("Validation size should be between 0 and {}. Received: {}.".format(
                len(train_images), validation_size))
        validation_images = train_images[:validation_size]
        validation_labels = train_labels[:validation_size]
        train_images = train_images[validation_size:]
        train_labels = train_labels[validation_size:]
        options = dict(dtype=dtype, reshape=reshape, seed=seed)
        train = _DataSet(train_images, train_labels, **options)
        validation = _DataSet(validation_images, validation_labels, **options)
        test = _DataSet(test_images, test_labels, **options)
        return Datasets(train=train, validation=validation, test=test)

    return {"read_data_sets": read_data_sets, "_DataSet": _DataSet, "_Datasets": Datasets,
            "_dense_to_one_hot": dense_to_one_hot, "DEFAULT_SOURCE_URL": SOURCE_URL}
