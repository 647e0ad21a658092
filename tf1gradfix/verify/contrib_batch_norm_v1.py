"""contrib's batch_norm, as TF 1.15 computed it, for the TF1 side (contrib_v1.py).

Its own module: the one contrib layer with two code paths (the fused kernel and the
unfused moments, chosen as TF 1.15 chose), moving averages and update collections,
each of which the model follows; TF 2.21's differences (the fused kernel's least
epsilon, the 4-D-only fusing of the core layer) are undone here as 1.15 had them.
"""

from __future__ import annotations


def batch_norm(tf):
    """contrib's batch_norm (layers.py, TF 1.15). With `fused` None or True (the default) a
    2-D or 4-D input runs `_fused_batch_norm` when it is 2-D (reshaped to [-1, 1, 1, C]), with
    `zero_debias_moving_mean`, or with `updates_collections` other than UPDATE_OPS; else the
    core `tf.layers` BatchNormalization takes it (fused on 4-D inputs), or, with batch weights,
    other collections or zero debiasing, the unfused code below it. The fused kernel moves the
    moving variance towards the batch variance times n / (n - 1)."""
    from tensorflow.python.framework.smart_cond import smart_cond, smart_constant_value
    from tensorflow.python.training.moving_averages import assign_moving_average

    least_epsilon = 1.001e-5   # TF 1.15's nn.fused_batch_norm raised a smaller epsilon to this (cuDNN's least)

    def fused_batch_norm(inputs, gamma, beta, epsilon, data_format, **moving):
        return tf.nn.fused_batch_norm(inputs, gamma, beta, epsilon=max(epsilon, least_epsilon),
                                      data_format=data_format, **moving)

    def constant_value(value):
        """contrib's utils.constant_value: a bool, a tensor's static value, None for a variable or a fed tensor."""
        if isinstance(value, tf.Variable):
            return None
        return smart_constant_value(value) if isinstance(value, tf.Tensor) else value

    def collections_of(variables_collections, name):
        if isinstance(variables_collections, dict):
            return variables_collections.get(name)
        return variables_collections

    def model_variable(name, collections=None, **kwargs):
        """contrib's variables.model_variable: a variable also in MODEL_VARIABLES."""
        collections = list(collections or []) + [tf.GraphKeys.GLOBAL_VARIABLES, tf.GraphKeys.MODEL_VARIABLES]
        return tf.get_variable(name, collections=collections, **kwargs)

    def model_getter(getter, name, *args, **kwargs):
        """_build_variable_getter(): the core layer's variables made by model_variable."""
        kwargs["collections"] = list(kwargs.get("collections") or []) + [tf.GraphKeys.GLOBAL_VARIABLES,
                                                                         tf.GraphKeys.MODEL_VARIABLES]
        return getter(name, *args, **kwargs)

    def statistics(inputs, params_shape, dtype, center, scale, param_initializers, param_regularizers,
                   variables_collections, trainable):
        """beta and gamma (constants where not `center` / `scale`, in the fused code), moving mean and variance."""
        initializers, regularizers = param_initializers or {}, param_regularizers or {}
        made = {}
        for name, wanted, default in (("beta", center, tf.zeros_initializer()),
                                      ("gamma", scale, tf.ones_initializer())):
            made[name] = model_variable(name, shape=params_shape, dtype=dtype,
                                        initializer=initializers.get(name, default), regularizer=regularizers.get(name),
                                        collections=collections_of(variables_collections, name),
                                        trainable=trainable) if wanted else None
        with tf.variable_scope(tf.get_variable_scope()) as local_scope:
            local_scope.set_partitioner(None)
            for name, default in (("moving_mean", tf.zeros_initializer()), ("moving_variance", tf.ones_initializer())):
                made[name] = model_variable(name, shape=params_shape, dtype=dtype,
                                            initializer=initializers.get(name, default), trainable=False,
                                            collections=collections_of(variables_collections, name))
        return made["beta"], made["gamma"], made["moving_mean"], made["moving_variance"]

    def updated(is_training, updates_collections, moving_mean, moving_variance, mean, variance, decay,
                zero_debias_moving_mean, forced, moving_fn):
        """The moving averages' updates: run with `forced` (updates_collections=None), else collected."""
        def updates():
            return (assign_moving_average(moving_mean, mean, decay, zero_debias=zero_debias_moving_mean),
                    assign_moving_average(moving_variance, variance, decay, zero_debias=False))
        if updates_collections is None:
            def force():
                with tf.control_dependencies(list(updates())):
                    return forced()
            return smart_cond(is_training, force, moving_fn)
        update_mean, update_variance = smart_cond(is_training, updates, lambda: (moving_mean, moving_variance))
        tf.add_to_collections(updates_collections, update_mean)
        tf.add_to_collections(updates_collections, update_variance)
        return None

    def _fused_batch_norm(inputs, decay, center, scale, epsilon, activation_fn, param_initializers,
                          param_regularizers, updates_collections, is_training, reuse, variables_collections,
                          outputs_collections, trainable, data_format, zero_debias_moving_mean, scope):
        if data_format not in ("NCHW", "NHWC"):
            raise ValueError("data_format has to be either NCHW or NHWC.")
        with tf.variable_scope(scope, "BatchNorm", [inputs], reuse=reuse):
            inputs = tf.convert_to_tensor(inputs)
            original_shape, original_inputs = inputs.get_shape(), inputs
            if original_shape.ndims is None:
                raise ValueError(f"Inputs {inputs.name} has undefined rank")
            if original_shape.ndims not in (2, 4):
                raise ValueError(f"Inputs {inputs.name} has unsupported rank. "
                                 f"Expected 2 or 4 but got {original_shape.ndims}")
            if original_shape.ndims == 2:
                channels = inputs.get_shape().dims[-1].value
                if channels is None:
                    raise ValueError("`C` dimension must be known but is None")
                inputs = tf.reshape(inputs, [-1, channels, 1, 1] if data_format == "NCHW" else [-1, 1, 1, channels])
            inputs_shape = inputs.get_shape()
            params_shape = inputs_shape[-1:] if data_format == "NHWC" else inputs_shape[1:2]
            if not params_shape.is_fully_defined():
                raise ValueError(f"Inputs {inputs.name} has undefined `C` dimension {params_shape}.")
            beta, gamma, moving_mean, moving_variance = statistics(   # (float32 whatever the input's dtype)
                inputs, params_shape, tf.float32, center, scale, param_initializers, param_regularizers,
                variables_collections, trainable)
            beta = beta if beta is not None else tf.constant(0.0, dtype=tf.float32, shape=params_shape)
            gamma = gamma if gamma is not None else tf.constant(1.0, dtype=tf.float32, shape=params_shape)
            outputs, mean, variance = smart_cond(
                is_training, lambda: fused_batch_norm(inputs, gamma, beta, epsilon, data_format),
                lambda: fused_batch_norm(inputs, gamma, beta, epsilon, data_format, mean=moving_mean,
                                         variance=moving_variance, is_training=False))
            training_value = constant_value(is_training)
            if training_value is None or training_value:
                forced = updated(is_training, updates_collections, moving_mean, moving_variance, mean, variance,
                                 decay, zero_debias_moving_mean, lambda: tf.identity(outputs), lambda: outputs)
                outputs = outputs if forced is None else forced
            outputs.set_shape(inputs_shape)
            if original_shape.ndims == 2:
                outputs = tf.reshape(outputs, tf.shape(original_inputs))
            if activation_fn is not None:
                outputs = activation_fn(outputs)
            return collected(outputs_collections, outputs)

    def collected(outputs_collections, outputs):
        if outputs_collections:
            tf.add_to_collections(outputs_collections, outputs)
        return outputs

    def batch_norm(inputs, decay=0.999, center=True, scale=False, epsilon=0.001, activation_fn=None,
                   param_initializers=None, param_regularizers=None, updates_collections=tf.GraphKeys.UPDATE_OPS,
                   is_training=True, reuse=None, variables_collections=None, outputs_collections=None,
                   trainable=True, batch_weights=None, fused=None, data_format="NHWC",
                   zero_debias_moving_mean=False, scope=None, renorm=False, renorm_clipping=None,
                   renorm_decay=0.99, adjustment=None):
        fused = True if fused is None else fused
        inputs = tf.convert_to_tensor(inputs)
        rank = inputs.get_shape().ndims
        possible_to_fuse = batch_weights is None and not renorm and rank in (2, 4) and adjustment is None
        if fused and possible_to_fuse and (zero_debias_moving_mean or rank == 2
                                           or updates_collections is not tf.GraphKeys.UPDATE_OPS):
            return _fused_batch_norm(inputs, decay, center, scale, epsilon, activation_fn, param_initializers,
                                     param_regularizers, updates_collections, is_training, reuse,
                                     variables_collections, outputs_collections, trainable, data_format,
                                     zero_debias_moving_mean, scope)
        if data_format not in ("NCHW", "NHWC"):
            raise ValueError("data_format has to be either NCHW or NHWC.")
        with tf.variable_scope(scope, "BatchNorm", [inputs], reuse=reuse, custom_getter=model_getter) as sc:
            inputs = tf.convert_to_tensor(inputs)
            if batch_weights is None and updates_collections is tf.GraphKeys.UPDATE_OPS and not zero_debias_moving_mean:
                initializers, regularizers = param_initializers or {}, param_regularizers or {}
                # TF 1.15's v1 layer fused only 4-D inputs (TF 2.21's fuses 5-D ones too), and its fused
                # kernel raised epsilon to 1.001e-5 (TF 2.21's does not)
                fuses = bool(fused) and rank == 4 and not renorm and adjustment is None
                layer = tf.layers.BatchNormalization(
                    axis=1 if data_format == "NCHW" else -1, momentum=decay,
                    epsilon=max(epsilon, least_epsilon) if fuses else epsilon, center=center, scale=scale,
                    beta_initializer=initializers.get("beta", tf.zeros_initializer()),
                    gamma_initializer=initializers.get("gamma", tf.ones_initializer()),
                    moving_mean_initializer=initializers.get("moving_mean", tf.zeros_initializer()),
                    moving_variance_initializer=initializers.get("moving_variance", tf.ones_initializer()),
                    beta_regularizer=regularizers.get("beta"), gamma_regularizer=regularizers.get("gamma"),
                    trainable=trainable, renorm=renorm, renorm_clipping=renorm_clipping,
                    renorm_momentum=renorm_decay, adjustment=adjustment, name=sc.name, _scope=sc, _reuse=reuse,
                    fused=fuses)
                outputs = layer.apply(inputs, training=is_training)
                for name in ("moving_mean", "moving_variance", "beta", "gamma"):
                    variable = getattr(layer, name)
                    collections = collections_of(variables_collections, name) if variable is not None else None
                    for collection in collections or []:
                        if variable not in tf.get_collection(collection):
                            tf.add_to_collection(collection, variable)
                if activation_fn is not None:
                    outputs = activation_fn(outputs)
                return collected(outputs_collections, outputs)
            # the unfused code: batch weights, other update collections, zero debiasing
            if renorm:
                raise ValueError("renorm is not supported with batch_weights, updates_collections or "
                                 "zero_debias_moving_mean")
            inputs_shape = inputs.get_shape()
            if inputs_shape.ndims is None:
                raise ValueError(f"Inputs {inputs.name} has undefined rank.")
            if batch_weights is not None:
                batch_weights = tf.convert_to_tensor(batch_weights)
                inputs_shape[0:1].assert_is_compatible_with(batch_weights.get_shape())
                batch_weights = tf.reshape(batch_weights, [-1] + [1] * (rank - 1))
            if data_format == "NCHW":
                axes, params_shape = [0] + list(range(2, rank)), inputs_shape[1:2]
                broadcast = [1, inputs_shape.dims[1].value] + [1] * (rank - 2)
            else:
                axes, params_shape, broadcast = list(range(rank - 1)), inputs_shape[-1:], None
            if not params_shape.is_fully_defined():
                raise ValueError(f"Inputs {inputs.name} has undefined channels dimension {params_shape}.")
            beta, gamma, moving_mean, moving_variance = statistics(
                inputs, params_shape, inputs.dtype.base_dtype, center, scale, param_initializers, None,
                variables_collections, trainable)
            training_value = constant_value(is_training)
            if training_value is None or training_value:
                if batch_weights is None:
                    mean, variance = tf.nn.moments(inputs, axes, keep_dims=data_format == "NCHW")
                else:
                    mean, variance = tf.nn.weighted_moments(inputs, axes, batch_weights,
                                                            keep_dims=data_format == "NCHW")
                if data_format == "NCHW":
                    mean, variance = tf.reshape(mean, [-1]), tf.reshape(variance, [-1])
                batch = (mean, variance)

                def moving():
                    return moving_mean, moving_variance
                forced = updated(is_training, updates_collections, moving_mean, moving_variance, mean, variance,
                                 decay, zero_debias_moving_mean, lambda: tuple(tf.identity(m) for m in batch), moving)
                mean, variance = forced if forced is not None else smart_cond(is_training, lambda: batch, moving)
            else:
                mean, variance = moving_mean, moving_variance
            if broadcast is not None:
                mean, variance = tf.reshape(mean, broadcast), tf.reshape(variance, broadcast)
                beta = tf.reshape(beta, broadcast) if beta is not None else None
                gamma = tf.reshape(gamma, broadcast) if gamma is not None else None
            outputs = tf.nn.batch_normalization(inputs, mean, variance, beta, gamma, epsilon)
            outputs.set_shape(inputs_shape)
            if activation_fn is not None:
                outputs = activation_fn(outputs)
            return collected(outputs_collections, outputs)

    return batch_norm
