"""Memory an export no longer needs, given back between its phases, and Python's garbage
collections kept off the objects that outlive them.

An export's peak is the model's weights, what the process holds beside them, and the largest
step's working memory (issue 42: at most 3x the float32 weights and a fixed few hundred MB).
Between steps, Python's cyclic garbage (torch.export's graphs and fake tensors) is collected, and
glibc's heap, which keeps the freed memory of tensors below its mmap threshold (up to 32 MB each)
for the process, is trimmed back to the system, so that the next step's working memory is not added
on top of the last one's leftovers.
"""

import contextlib
import ctypes
import gc


def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        return None


_TRIM = _malloc_trim()


def trim():
    """Gives the heap's free memory back to the system (glibc's malloc_trim; elsewhere nothing)."""
    if _TRIM is not None:
        _TRIM(0)


def release():
    """Collects Python's cyclic garbage, then trims the heap: between an export's phases."""
    gc.collect()
    trim()


@contextlib.contextmanager
def frozen():
    """Within the block, Python's garbage collections skip the objects that exist on entering it
    (gc.freeze): torch's and transformers' modules, the model, then torch.export's graphs, hundreds
    of thousands of objects that every full collection would walk again (a second and a half of
    SmolLM2-135M's export); what the block makes and drops is collected as usual. They are unfrozen
    on leaving. A process that froze objects itself is left as it is."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
