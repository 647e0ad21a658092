"""A reference model of the tf.contrib pieces the rewrite maps, for the TF1 side.

TensorFlow 2 has no tf.contrib, so an original program that uses it cannot run
under the TF1 semantics the verifier gives it. These functions are written from
TF 1.15's contrib (tensorflow/contrib/layers/python/layers/{initializers,layers,
regularizers}.py, contrib/framework): the same defaults, the same draws, the same
variable names (`fully_connected/weights`, `Conv/biases`). Only the rows of
tf1gradfix/rules/contrib.toml that the rewrite maps are modelled; any other
contrib name is missing, so such a program fails on the original side.
"""

from __future__ import annotations

import math
import sys
import types


def install(tf) -> None:
    """Give the compat.v1 module `tf` a `contrib` namespace (importable too), if it has none."""
    if "contrib" in dir(tf):
        return
    layers = types.ModuleType("tensorflow.contrib.layers")
    framework = types.ModuleType("tensorflow.contrib.framework")
    for name, fn in _layers(tf).items():
        setattr(layers, name, fn)
    framework.get_global_step = tf.train.get_global_step
    framework.get_or_create_global_step = tf.train.get_or_create_global_step
    contrib = types.ModuleType("tensorflow.contrib")
    contrib.layers, contrib.framework = layers, framework
    tf.contrib = contrib
    sys.modules.update({"tensorflow.contrib": contrib, "tensorflow.contrib.layers": layers,
                        "tensorflow.contrib.framework": framework})


def _layers(tf) -> dict:
    def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None, dtype=tf.float32):
        if not dtype.is_floating:
            raise TypeError("Cannot create initializer for non-floating point type.")
        if mode not in ["FAN_IN", "FAN_OUT", "FAN_AVG"]:
            raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")

        def _initializer(shape, dtype=dtype, partition_info=None):
            if not dtype.is_floating:
                raise TypeError("Cannot create initializer for non-floating point type.")
            shape = [int(d) for d in shape]
            fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1])
            fan_out = float(shape[-1])
            for dim in shape[:-2]:
                fan_in *= float(dim)
                fan_out *= float(dim)
            n = {"FAN_IN": fan_in, "FAN_OUT": fan_out, "FAN_AVG": (fan_in + fan_out) / 2.0}[mode]
            if uniform:
                limit = math.sqrt(3.0 * factor / n)
                return tf.random_uniform(shape, -limit, limit, dtype, seed=seed)
            return tf.truncated_normal(shape, 0.0, math.sqrt(1.3 * factor / n), dtype, seed=seed)
        return _initializer

    def xavier_initializer(uniform=True, seed=None, dtype=tf.float32):
        return variance_scaling_initializer(1.0, "FAN_AVG", uniform, seed, dtype)

    def _renamed(getter, name, *args, **kwargs):
        """contrib's layer variable getter: a tf.layers layer's kernel/bias are weights/biases."""
        parts = name.split("/")
        parts[-1] = {"kernel": "weights", "bias": "biases"}.get(parts[-1], parts[-1])
        return getter("/".join(parts), *args, **kwargs)

    def _apply(layer_class, default_name, inputs, settings, activation_fn, normalizer_fn, normalizer_params,
               biases_initializer, reuse, scope):
        with tf.variable_scope(scope, default_name, [inputs], reuse=reuse, custom_getter=_renamed) as sc:
            inputs = tf.convert_to_tensor(inputs)
            layer = layer_class(**settings, activation=None,
                                use_bias=not normalizer_fn and biases_initializer is not None,
                                bias_initializer=biases_initializer, activity_regularizer=None, name=sc.name,
                                dtype=inputs.dtype.base_dtype, _scope=sc, _reuse=reuse)
            outputs = layer.apply(inputs)
            if normalizer_fn is not None:
                outputs = normalizer_fn(outputs, **(normalizer_params or {}))
            return activation_fn(outputs) if activation_fn is not None else outputs

    def fully_connected(inputs, num_outputs, activation_fn=tf.nn.relu, normalizer_fn=None, normalizer_params=None,
                        weights_initializer=xavier_initializer(), weights_regularizer=None,
                        biases_initializer=tf.zeros_initializer(), biases_regularizer=None, reuse=None,
                        variables_collections=None, outputs_collections=None, trainable=True, scope=None):
        if not isinstance(num_outputs, int):
            raise ValueError(f"num_outputs type should be one of [int], got {type(num_outputs)}.")
        settings = dict(units=num_outputs, kernel_initializer=weights_initializer,
                        kernel_regularizer=weights_regularizer, bias_regularizer=biases_regularizer,
                        trainable=trainable)
        return _apply(tf.layers.Dense, "fully_connected", inputs, settings, activation_fn, normalizer_fn,
                      normalizer_params, biases_initializer, reuse, scope)

    def conv2d(inputs, num_outputs, kernel_size, stride=1, padding="SAME", data_format=None, rate=1,
               activation_fn=tf.nn.relu, normalizer_fn=None, normalizer_params=None,
               weights_initializer=xavier_initializer(), weights_regularizer=None,
               biases_initializer=tf.zeros_initializer(), biases_regularizer=None, reuse=None,
               variables_collections=None, outputs_collections=None, trainable=True, scope=None):
        if data_format not in [None, "NWC", "NCW", "NHWC", "NCHW", "NDHWC", "NCDHW"]:
            raise ValueError(f"Invalid data_format: {data_format!r}")
        channels = "channels_first" if data_format and data_format.startswith("NC") else "channels_last"
        settings = dict(filters=num_outputs, kernel_size=kernel_size, strides=stride, padding=padding,
                        data_format=channels, dilation_rate=rate, kernel_initializer=weights_initializer,
                        kernel_regularizer=weights_regularizer, bias_regularizer=biases_regularizer,
                        trainable=trainable)
        return _apply(tf.layers.Conv2D, "Conv", inputs, settings, activation_fn, normalizer_fn,
                      normalizer_params, biases_initializer, reuse, scope)

    def _pool(class_name, default_name):
        def pool(inputs, kernel_size, stride=2, padding="VALID", data_format="NHWC", outputs_collections=None,
                 scope=None):
            if data_format not in ("NCHW", "NHWC"):
                raise ValueError("data_format has to be either NCHW or NHWC.")
            with tf.name_scope(scope, default_name, [inputs]) as sc:
                inputs = tf.convert_to_tensor(inputs)
                df = "channels_first" if data_format and data_format.startswith("NC") else "channels_last"
                layer = getattr(tf.layers, class_name)(pool_size=kernel_size, strides=stride, padding=padding, data_format=df, _scope=sc)
                return layer.apply(inputs)
        return pool

    def flatten(inputs, outputs_collections=None, scope=None):
        with tf.name_scope(scope, "Flatten", [inputs]):
            return tf.layers.flatten(inputs)

    def l2_regularizer(scale, scope=None):
        if isinstance(scale, int) or scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 (or an integer) on a regularizer: {scale}")
        if scale == 0.0:
            return lambda _: None

        def l2(weights):
            with tf.name_scope(scope, "l2_regularizer", [weights]) as name:
                my_scale = tf.convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
                return tf.multiply(my_scale, tf.nn.l2_loss(weights), name=name)
        return l2

    return {"variance_scaling_initializer": variance_scaling_initializer, "xavier_initializer": xavier_initializer,
            "xavier_initializer_conv2d": xavier_initializer, "fully_connected": fully_connected,
            "conv2d": conv2d, "convolution2d": conv2d, "flatten": flatten, "l2_regularizer": l2_regularizer,
            "max_pool2d": _pool("MaxPooling2D", "MaxPool2D"),   # (tf.layers is loaded when first used)
            "avg_pool2d": _pool("AveragePooling2D", "AvgPool2D")}
