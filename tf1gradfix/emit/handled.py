"""Codes of the constructs a successful restructuring removes (readable without LibCST)."""

HANDLED = ("TFG101", "TFG102", "TFG103", "TFG104", "TFG105", "TFG106", "TFG107",
           "TFG201", "TFG202", "TFG203", "TFG204", "TFG205", "TFG301", "TFG302", "TFG303", "TFG304", "TFG305", "TFG306")
# ... and of what it removes when it succeeds, though a file may need more: tf.contrib
# (a rewrite that would still spell a contrib name is refused).
FIXED_WHEN_RESTRUCTURED = HANDLED + ("TFG901",)
