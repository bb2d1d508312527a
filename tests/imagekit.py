"""Image files for the tests: a real (tiny) PNG, made here, so no binary file is checked in."""

from __future__ import annotations

import os
import struct
import zlib


def png_bytes(width: int = 2, height: int = 1, noise: bool = False) -> bytes:
    """A valid PNG of `width` × `height` red pixels (random ones with `noise`: a file that does
    not compress, as big as its pixels)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\x00" + (os.urandom(3 * width) if noise else b"\xff\x00\x00" * width) for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
