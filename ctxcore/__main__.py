"""``python -m ctxcore``: the command line.

Once the output is flushed the process ends at once: tearing down a build's
trace and caches object by object took about a tenth of a 10k-candidate CLI
build, and nothing is left to write by then (every file the CLI opens is closed
before ``main`` returns).
"""

import os
import sys

from .cli import main

code = main()
try:
    sys.stdout.flush()
    sys.stderr.flush()
except BrokenPipeError:  # the reader went away (``| head``): not an error of ours
    pass
except OSError as err:  # a full disk, say: the output is incomplete
    os.write(2, f"error: cannot write the output ({err.strerror})\n".encode())
    code = 1
os._exit(code)
