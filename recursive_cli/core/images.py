"""Image files given to the model (`-i FILE`, `@file.png` in chat, `read_file` of an image).

An image is read whole, checked by its first bytes (PNG, JPEG, GIF or WebP: what both the
OpenAI and the Anthropic APIs take) and kept as base64 in an `Image`, which the providers
put on the wire and the session transcript keeps, once, with the message it came with.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

from .errors import ImageError
from .messages import Image, Message

MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Anthropic's limit for one image (OpenAI's is higher): a bigger file is refused, not sent."""

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")


def sniff_media_type(head: bytes) -> str | None:
    """The media type an image file's first bytes say, or None when they are no image we send."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def looks_like_image(path: Path) -> bool:
    """Whether `path`'s name ends as an image file's does (a cheap test before reading it)."""
    return path.suffix.lower() in IMAGE_SUFFIXES


def image_from_bytes(data: bytes, source: str) -> Image:
    """`data` as an Image; ImageError (naming `source`) when it is no image we send, or too big."""
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageError(f"{source} is too big to send as an image "
                         f"({len(data)} bytes; at most {MAX_IMAGE_BYTES} bytes)")
    media_type = sniff_media_type(data[:16])
    if media_type is None:
        raise ImageError(f"{source} is not an image (PNG, JPEG, GIF or WebP)")
    return Image(media_type=media_type, data=base64.b64encode(data).decode("ascii"), source=source)


def load_image(path: Path, shown: str | None = None) -> Image:
    """The image file at `path` (`shown`: its name in messages); ImageError when it cannot be sent."""
    name = shown or str(path)
    try:
        size = path.stat().st_size
        data = b"" if size > MAX_IMAGE_BYTES else path.read_bytes()  # (too big: said below, unread)
    except OSError as exc:
        raise ImageError(f"{name} {_unreadable(exc)}") from None
    if size > MAX_IMAGE_BYTES:
        raise ImageError(f"{name} is too big to send as an image ({size} bytes; at most {MAX_IMAGE_BYTES} bytes)")
    return image_from_bytes(data, name)


def _unreadable(exc: OSError) -> str:
    """Why a file could not be read, after its name."""
    if isinstance(exc, FileNotFoundError):
        return "does not exist"
    if isinstance(exc, IsADirectoryError):
        return "is a directory, not an image"
    return f"cannot be read: {exc.strerror or exc}"


def image_size(image: Image) -> int:
    """The bytes of the image file (its base64 text decoded)."""
    return len(image.data) * 3 // 4 - image.data[-2:].count("=")


IMAGE_TOKENS = 1600
"""What one image costs a prompt, about: Anthropic's most (1.15 megapixels at width × height / 750),
above OpenAI's for a high-detail 1024 px image. Its base64 text is far longer, and is not what
the model reads, so a message's size in tokens counts this for each image instead."""


def image_bytes_over(message: Message) -> int:
    """The bytes a message's images take in a request beyond their token cost (4 bytes a token):
    what a size measured in request bytes leaves out to count them as IMAGE_TOKENS each."""
    images = message.images or ()
    return sum(len(image.data) for image in images) - 4 * IMAGE_TOKENS * len(images)


def image_note(image: Image) -> str:
    """What a model that takes no images is told in its place."""
    return (f"[image {image.source or ''} ({image.media_type}, {image_size(image)} bytes): "
            "this model does not take images]")


# Model families that take text only (their servers refuse image parts); any other model is
# sent images as they are, and a server that cannot take them says so in its error.
_TEXT_ONLY = ("gpt-3.5", "o1-mini", "o3-mini", "deepseek", "codestral", "qwen2.5-coder", "qwen3-coder",
              "llama3", "llama-3", "mistral-small-24b", "text-")


def takes_images(model: str) -> bool:
    """Whether `model` takes image input, as far as its name tells."""
    name = model.lower().rsplit("/", 1)[-1]
    return not name.startswith(_TEXT_ONLY)


_MENTION = re.compile(r"(?<!\S)@(\S+?\.(?:png|jpe?g|gif|webp))(?=[\s,;:!?)]|\.?$|\.\s)", re.IGNORECASE)


def image_mentions(text: str) -> list[str]:
    """The image paths named `@path.png` in a chat message, in order, each once."""
    return list(dict.fromkeys(match.group(1) for match in _MENTION.finditer(text)))
