"""A reference model of the tf.contrib pieces the rewrite maps, for the TF1 side.

TensorFlow 2 has no tf.contrib, so an original program that uses it cannot run
under the TF1 semantics the verifier gives it. These functions are written from
TF 1.15's contrib (tensorflow/contrib/layers/python/layers/{initializers,layers,
regularizers,optimizers}.py, contrib/framework, contrib/rnn): the same defaults, the
same draws, the same variable names (`fully_connected/weights`, `Conv/biases`,
`BatchNorm/moving_mean`, `OptimizeLoss/learning_rate`), the same summaries.
Where TF 2.21, which runs them here, computes otherwise than TF 1.15 did, the
model does as 1.15 did and says so (batch_norm: the fused kernel's least epsilon,
the 4-D-only fusing of the core layer; contrib_batch_norm_v1.py). Only the rows of
rules/contrib.toml that the rewrite maps are modelled; any other
contrib name is missing, so such a program fails on the original side.
"""

from __future__ import annotations

import math
import sys
import types

from tf1gradfix.verify import contrib_batch_norm_v1


def install(tf) -> None:
    """Give the compat.v1 module `tf` a `contrib` namespace (importable too), if it has none."""
    if "contrib" in dir(tf):
        return
    layers = types.ModuleType("tensorflow.contrib.layers")
    framework = types.ModuleType("tensorflow.contrib.framework")
    for name, fn in {**_layers(tf), **_optimizers(tf)}.items():
        setattr(layers, name, fn)
    framework.get_global_step = tf.train.get_global_step
    framework.get_or_create_global_step = tf.train.get_or_create_global_step
    rnn = types.ModuleType("tensorflow.contrib.rnn")
    rnn.__getattr__ = lambda name: getattr(tf.nn.rnn_cell, name)   # (TF 1.15: the very classes of tf.nn.rnn_cell)
    contrib = types.ModuleType("tensorflow.contrib")
    contrib.layers, contrib.framework, contrib.rnn = layers, framework, rnn
    tf.contrib = contrib
    sys.modules.update({"tensorflow.contrib": contrib, "tensorflow.contrib.layers": layers,
                        "tensorflow.contrib.framework": framework, "tensorflow.contrib.rnn": rnn})


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

    return {"batch_norm": contrib_batch_norm_v1.batch_norm(tf), "variance_scaling_initializer": variance_scaling_initializer,
            "xavier_initializer": xavier_initializer,
            "xavier_initializer_conv2d": xavier_initializer, "fully_connected": fully_connected,
            "conv2d": conv2d, "convolution2d": conv2d, "flatten": flatten, "l2_regularizer": l2_regularizer,
            "max_pool2d": _pool("MaxPooling2D", "MaxPool2D"),   # (tf.layers is loaded when first used)
            "avg_pool2d": _pool("AveragePooling2D", "AvgPool2D")}


def _optimizers(tf) -> dict:
    """contrib's optimize_loss (layers/python/layers/optimizers.py, TF 1.15), as written there:
    a float learning rate becomes the variable `OptimizeLoss/learning_rate`, the summaries
    go to the SUMMARIES collection, and the result is the loss, run after the update."""
    from tensorflow.python.ops.control_flow_ops import with_dependencies

    optimizer_cls_names = {
        "Adagrad": tf.train.AdagradOptimizer,
        "Adam": tf.train.AdamOptimizer,
        "Ftrl": tf.train.FtrlOptimizer,
        "Momentum": lambda learning_rate: tf.train.MomentumOptimizer(learning_rate, momentum=0.9),
        "RMSProp": tf.train.RMSPropOptimizer,
        "SGD": tf.train.GradientDescentOptimizer,
    }
    optimizer_summaries = ["learning_rate", "loss", "gradients", "gradient_norm", "global_gradient_norm"]

    def optimize_loss(loss, global_step, learning_rate, optimizer, gradient_noise_scale=None,
                      gradient_multipliers=None, clip_gradients=None, learning_rate_decay_fn=None, update_ops=None,
                      variables=None, name=None, summaries=None, colocate_gradients_with_ops=False,
                      increment_global_step=True):
        loss = tf.convert_to_tensor(loss)
        if loss.get_shape().ndims != 0:   # (contrib.framework.assert_scalar)
            raise ValueError(f"Expected scalar shape for {loss.name}, saw shape: {loss.get_shape()}.")
        if global_step is None:
            global_step = tf.train.get_global_step()
        else:
            tf.train.assert_global_step(global_step)
        with tf.variable_scope(name, "OptimizeLoss", [loss, global_step]):
            if update_ops is None:
                update_ops = set(tf.get_collection(tf.GraphKeys.UPDATE_OPS))
            if update_ops:
                loss = with_dependencies(list(update_ops), loss)
            lr = None
            if learning_rate is not None:
                if isinstance(learning_rate, tf.Tensor) and learning_rate.get_shape().ndims == 0:
                    lr = learning_rate
                elif isinstance(learning_rate, float):
                    if learning_rate < 0.0:
                        raise ValueError("Invalid learning_rate %s.", learning_rate)
                    lr = tf.get_variable("learning_rate", [], trainable=False,
                                         initializer=tf.constant_initializer(learning_rate))
                else:
                    raise ValueError("Learning rate should be 0d Tensor or float. "
                                     f"Got {learning_rate} of type {type(learning_rate)}")
            if summaries is None:
                summaries = ["loss", "learning_rate", "global_gradient_norm"]
            else:
                for summ in summaries:
                    if summ not in optimizer_summaries:
                        raise ValueError(f"Summaries should be one of [{', '.join(optimizer_summaries)}], "
                                         f"you provided {summ}.")
            if learning_rate is not None and learning_rate_decay_fn is not None:
                if global_step is None:
                    raise ValueError("global_step is required for learning_rate_decay_fn.")
                lr = learning_rate_decay_fn(lr, global_step)
                if "learning_rate" in summaries:
                    tf.summary.scalar("learning_rate", lr)
            if isinstance(optimizer, str):
                if lr is None:
                    raise ValueError(f"Learning rate is None, but should be specified if optimizer is string ({optimizer}).")
                if optimizer not in optimizer_cls_names:
                    raise ValueError(f"Optimizer name should be one of [{', '.join(optimizer_cls_names)}], "
                                     f"you provided {optimizer}.")
                opt = optimizer_cls_names[optimizer](learning_rate=lr)
            elif isinstance(optimizer, type) and issubclass(optimizer, tf.train.Optimizer):
                if lr is None:
                    raise ValueError(f"Learning rate is None, but should be specified if optimizer is class ({optimizer}).")
                opt = optimizer(learning_rate=lr)
            elif isinstance(optimizer, tf.train.Optimizer):
                opt = optimizer
            elif callable(optimizer):
                opt = optimizer(lr) if learning_rate is not None else optimizer()
                if not isinstance(opt, tf.train.Optimizer):
                    raise ValueError(f"Unrecognized optimizer: function should return subclass of Optimizer. Got {opt}.")
            else:
                raise ValueError("Unrecognized optimizer: should be string, subclass of Optimizer, instance of "
                                 f"subclass of Optimizer or function with one argument. Got {optimizer}.")
            if variables is None:
                variables = tf.trainable_variables()
            gradients = opt.compute_gradients(loss, variables, colocate_gradients_with_ops=colocate_gradients_with_ops)
            if gradient_noise_scale is not None:
                gradients = _add_scaled_noise_to_gradients(gradients, gradient_noise_scale)
            if gradient_multipliers is not None:
                gradients = _multiply_gradients(gradients, gradient_multipliers)
                if not gradients:
                    raise ValueError("Empty list of (gradient, var) pairs encountered. This is most likely to be "
                                     "caused by an improper value of gradient_multipliers.")
            if "global_gradient_norm" in summaries or "gradient_norm" in summaries:
                tf.summary.scalar("global_norm/gradient_norm", tf.global_norm(list(zip(*gradients))[0]))
            if isinstance(clip_gradients, float):
                gradients = _clip_gradients_by_norm(gradients, clip_gradients)
            elif callable(clip_gradients):
                gradients = clip_gradients(gradients)
            elif clip_gradients is not None:
                raise ValueError(f"Unknown type {type(clip_gradients)} for clip_gradients")
            if "loss" in summaries:
                tf.summary.scalar("loss", loss)
            for gradient, variable in gradients:
                grad_values = gradient.values if isinstance(gradient, tf.IndexedSlices) else gradient
                if grad_values is not None:
                    var_name = variable.name.replace(":", "_")
                    if "gradients" in summaries:
                        tf.summary.histogram(f"gradients/{var_name}", grad_values)
                    if "gradient_norm" in summaries:
                        tf.summary.scalar(f"gradient_norm/{var_name}", tf.global_norm([grad_values]))
            if clip_gradients is not None and ("global_gradient_norm" in summaries or "gradient_norm" in summaries):
                tf.summary.scalar("global_norm/clipped_gradient_norm", tf.global_norm(list(zip(*gradients))[0]))
            grad_updates = opt.apply_gradients(gradients, global_step=global_step if increment_global_step else None,
                                               name="train")
            return with_dependencies([grad_updates], loss)   # (the loss this run computed, once the update ran)

    def _clip_gradients_by_norm(grads_and_vars, clip_gradients):
        gradients, variables = zip(*grads_and_vars)
        clipped_gradients, _ = tf.clip_by_global_norm(gradients, clip_gradients)
        return list(zip(clipped_gradients, variables))

    def _add_scaled_noise_to_gradients(grads_and_vars, gradient_noise_scale):
        gradients, variables = zip(*grads_and_vars)
        noisy_gradients = []
        for gradient in gradients:
            if gradient is None:
                noisy_gradients.append(None)
                continue
            shape = gradient.dense_shape if isinstance(gradient, tf.IndexedSlices) else gradient.get_shape()
            noisy_gradients.append(gradient + tf.truncated_normal(shape) * gradient_noise_scale)
        return list(zip(noisy_gradients, variables))

    def _multiply_gradients(grads_and_vars, gradient_multipliers):
        multiplied = []
        for grad, var in grads_and_vars:
            if grad is not None and (var in gradient_multipliers or var.name in gradient_multipliers):
                multiplier = gradient_multipliers[var if var in gradient_multipliers else var.name]
                if isinstance(grad, tf.IndexedSlices):
                    grad = tf.IndexedSlices(grad.values * multiplier, grad.indices, grad.dense_shape)
                else:
                    grad *= tf.cast(multiplier, grad.dtype)
            multiplied.append((grad, var))
        return multiplied

    return {"optimize_loss": optimize_loss, "OPTIMIZER_CLS_NAMES": optimizer_cls_names,
            "OPTIMIZER_SUMMARIES": optimizer_summaries}
