"""Check a whole GGUF file's structure: its header parses and its size is what it announces.

Used when the hub lists a file without a sha256 (a non-LFS upload): the bytes
cannot be checked against anything, but the structure can. The header must
parse (:func:`~specula.core.gguf.reader.read_header`), every tensor's offset
must be aligned, and the tensor data the header describes must end where the
file ends (``GGUFWriter`` pads the last tensor to the alignment, so the file
may be up to one alignment longer). A body corrupted at the start, truncated or
padded is caught; a flipped byte inside the tensor data is not (only a
checksum catches that), and the result says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

from specula.core.gguf.reader import FileSource, GGUFError, GGUFHeader, read_header

DEFAULT_ALIGNMENT = 32  # GGUF_DEFAULT_ALIGNMENT in ggml/include/gguf.h


@dataclass(frozen=True)
class StructureCheck:
    """What was verified: the header always; the sizes when every tensor type is known."""

    sizes_checked: bool
    data_bytes: int | None

    def describe(self) -> str:
        what = "header and tensor data size" if self.sizes_checked else "header"
        return f"no checksum available, verified structure ({what})"


def _align(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def _tensor_nbytes(header: GGUFHeader, name: str, n_elements: int, ggml_type: int) -> int | None:
    try:
        block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(ggml_type)]
    except (ValueError, KeyError):
        return None
    if n_elements % block:
        raise GGUFError(header.source_name,
                        f"tensor {name} has {n_elements} elements, not a whole number of "
                        f"{block}-element blocks")
    return int(n_elements // block * type_size)


def check_structure(path: str | os.PathLike[str]) -> StructureCheck:
    """Verify the file at ``path``; raises :class:`GGUFError` naming the first problem."""
    src = FileSource(path)
    header = read_header(src)
    size = src.size or 0
    alignment = header.fields.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or isinstance(alignment, bool) or alignment <= 0 \
            or alignment & (alignment - 1):
        raise GGUFError(src.name, f"general.alignment should be a power of two, found {alignment!r}")
    data_start = _align(header.header_bytes, alignment)
    end = 0
    known = True
    for t in header.tensors:
        if t.offset % alignment:
            raise GGUFError(src.name, f"tensor {t.name} starts at {t.offset}, not a multiple of "
                                      f"the alignment {alignment}")
        nbytes = _tensor_nbytes(header, t.name, t.n_elements, t.ggml_type)
        if nbytes is None:
            known = False
            continue
        end = max(end, t.offset + nbytes)
    if not known:
        if data_start > size:
            raise GGUFError(src.name, f"the header ends at {data_start}, past the file's {size} bytes")
        return StructureCheck(False, None)
    expected = data_start + end
    if not expected <= size <= _align(expected, alignment):
        raise GGUFError(src.name, f"the header announces {expected} bytes of header and tensor data, "
                                  f"the file has {size}")
    return StructureCheck(True, end)
