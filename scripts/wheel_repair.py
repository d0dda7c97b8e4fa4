"""auditwheel repair, bundling glib and the X11 client libraries as well.

The manylinux policies let a wheel rely on the machine for glib, gobject, expat and the X11 client
libraries (most desktops have them), so auditwheel leaves them out; headscan needs them only
because Debian's cairo and pango link them, and a minimal Linux (a container, a cluster node) has
none of them. This runs auditwheel's own `repair` with those libraries taken off its whitelists
(every policy alike, so the policies stay nested as PEP 600 asks): it copies them into the wheel
like every other library. Arguments: those of `auditwheel repair`.
"""

import json
import sys
import tempfile
from pathlib import Path

import auditwheel.policy
from auditwheel.libc import Libc
from auditwheel.main import main

BUNDLED_ANYWAY = {
    "libglib-2.0.so.0", "libgobject-2.0.so.0", "libgthread-2.0.so.0",
    "libX11.so.6", "libXext.so.6", "libXrender.so.1", "libICE.so.6", "libSM.so.6", "libexpat.so.1",
}


def narrowed_policies(folder: Path) -> Path:
    path = auditwheel.policy._POLICY_JSON_MAP[Libc.GLIBC]
    policies = json.loads(path.read_text())
    for policy in policies:
        policy["lib_whitelist"] = [name for name in policy["lib_whitelist"] if name not in BUNDLED_ANYWAY]
    narrowed = folder / path.name
    narrowed.write_text(json.dumps(policies))
    return narrowed


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        auditwheel.policy._POLICY_JSON_MAP[Libc.GLIBC] = narrowed_policies(Path(folder))
        sys.argv = ["auditwheel", "repair", *sys.argv[1:]]
        sys.exit(main())
