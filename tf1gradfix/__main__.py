"""`python -m tf1gradfix`.

`-m` puts the current folder first on sys.path, so a user's `argparse.py`,
`json.py` or `tempfile.py` there would be imported, and run, in place of the
standard library's. The tool never runs the user's code: that entry goes
before anything else is imported (`sys` and `os` are loaded at start-up).
"""

import os
import sys

if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

try:
    from tf1gradfix.cli.main import main  # noqa: E402 - after the sys.path fix, on purpose
except KeyboardInterrupt:  # Ctrl-C while the tool is still loading: nothing was read or written yet
    exec("pass")  # see cli.forget_interrupt: else CPython may still end the process by SIGINT
    sys.stderr.write("tf1gradfix: interrupted; every file is unchanged\n")
    raise SystemExit(130) from None

raise SystemExit(main())
