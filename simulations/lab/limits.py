"""The recipe lab's reading limits, declared once: what a file may hold before the readers refuse it
with a one-line `LabReadError`, so a hostile or broken checkpoint costs bounded time and memory.

Every limit is checked from what a file *declares* (a header, a zip directory, a pickled structure)
before its data is read, and each is far above what real checkpoints use (their figures in the
comments). `LIMITS` is what `lowprec analyze` and `lab.analyze` use; a caller with a tighter budget
(an upload on a shared server) passes its own `ReadLimits` to `readers.scan`.

The other bounds of the lab follow from these and from the chunked runner: a tensor's data is read
`chunk_elements` at a time (a 1-D tensor in segments of `LINE_SEGMENT` elements), so memory stays
near one chunk's working set whatever the tensor's size; only regular files are opened (a FIFO, a
device or a socket is refused before it is opened).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LIMITS", "LINE_SEGMENT", "ReadLimits"]


@dataclass(frozen=True)
class ReadLimits:
    """What one file may declare (see the module docstring)."""

    #: entries of one file: tensors and other leaves of a state dict (after expanding shared
    #: references), members of a .npz, tensors of a .safetensors (a large single-file MoE has ~90 000)
    max_entries: int = 100_000
    #: nesting of containers (dicts, lists, tuples) in a state dict (real ones: under 10)
    max_depth: int = 32
    #: characters of an entry's dotted name (real ones: under 200)
    max_name_chars: int = 1024
    #: dimensions of one tensor (numpy's own maximum)
    max_dims: int = 64
    #: bytes of a .npy header (numpy's own limit for files it does not trust)
    max_npy_header: int = 10_000
    #: bytes of a JSON header: a .safetensors header, a sharded checkpoint's *.index.json (real ones:
    #: kilobytes to a few megabytes)
    max_json_bytes: int = 64 << 20
    #: bytes of the pickle inside a PyTorch zip file (data.pkl; ~100 bytes per tensor)
    max_pickle_bytes: int = 256 << 20
    #: uncompressed bytes of all members of a .npz together
    max_npz_bytes: int = 32 << 30
    #: a compressed zip member (.npz, PyTorch file) may inflate to at most this many times its
    #: compressed size once it is over `inflate_floor` bytes (a zip bomb inflates ~1000×; float data
    #: ~1.1×; save a mostly-zero array with np.savez, uncompressed, if it is refused)
    max_inflate_ratio: int = 100
    inflate_floor: int = 1 << 20

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ReadLimits.{name} must be a positive integer, got {value!r}")


#: the limits `lowprec analyze` and `lab.analyze` read with
LIMITS = ReadLimits()

#: a 1-D tensor longer than this is processed in segments of this many elements (a multiple of every
#: recipe's block width: 16, 32, 128), so it is chunked like the rows of a matrix
LINE_SEGMENT = 1 << 16
