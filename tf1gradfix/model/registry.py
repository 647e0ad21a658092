"""The constructs of a graph statement, in the order they are tried: each module's
`build(builder, statement)` recognizes its TF1 form, checks it and adds its nodes
(True), or leaves the statement to the next one (False). Adding a construct is a
module in tf1gradfix/constructs and one line here; `tensors` takes the rest."""

from __future__ import annotations

from tf1gradfix.constructs import (datasets, global_step, gradient_calls, initializers, layers, optimize_loss, optimizer_calls,
                                   optimizers, placeholders, restarted_iterators, rnn_cells, rnn_stacks, savers, sessions, summaries,
                                   tensors, updates, var_lists, variable_factories, variable_groups, variables)

REGISTRY = (
    summaries,          # tf.summary.scalar/histogram/merge_all/merge
    restarted_iterators,  # initializable and reinitializable tf.data iterators, their initializers and fed inputs
    placeholders,       # tf.placeholder, tf.placeholder_with_default
    datasets,           # tf.data pipelines, one-shot iterators and their get_next()
    variables,          # tf.Variable, tf.get_variable
    variable_groups,    # {'h1': tf.Variable(...), ...}, [tf.Variable(...), ...]
    variable_factories, # w = weight_variable(shape): a function returning one tf.Variable
    global_step,        # tf.train.get_or_create_global_step, get_global_step
    layers,             # tf.layers.* (layers.toml)
    rnn_stacks,         # DropoutWrapper, MultiRNNCell, bidirectional_dynamic_rnn of those cells
    rnn_cells,          # tf.nn.rnn_cell.* cells, their zero_state and dynamic_rnn (rnn_cells.toml)
    optimizers,         # tf.train.*Optimizer(...)
    initializers,       # tf.global_variables_initializer() and kin
    sessions,           # sess = tf.Session(...)
    savers,             # saver = tf.train.Saver()
    optimizer_calls,    # opt.minimize / compute_gradients / apply_gradients
    optimize_loss,      # tf.contrib.layers.optimize_loss: an optimizer and its minimize, clipped
    updates,            # tf.assign*, v.assign*, tf.group of them
    gradient_calls,     # tf.gradients
    var_lists,          # variable collections and lists
    tensors,            # anything else: a tensor, or a static value
)
