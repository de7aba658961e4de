#!/usr/bin/env python3
"""The ICU data a release fetchrun carries: the toolchain's, less what fetchrun never reads.

Usage:
  icu-data.py list DAT                 the items of an ICU common data file, largest kinds first
  icu-data.py filter DAT OUT           writes OUT with only the items fetchrun keeps

Foundation's static library carries ICU's whole data package (34 MB of the 81 MB stripped
binary). fetchrun formats dates, times and time zones in English or in fixed forms
(en_US_POSIX), reads time zones by their IANA names (digests, mails), matches ICU regular
expressions (filters, patterns) and folds text for suggestions. None of that reads another
language's locale data, a collation table, the character-set converters of legacy encodings
(libxml2 decodes feeds and pages; Foundation converts only UTF-8, UTF-16 and Latin-1 here),
transliterators, spelled-out numbers, or unit and currency names.

So `filter` keeps every item that is not tied to a locale (properties, case mapping,
normalisation, break rules, time-zone rules, supplemental data, the alias table of
converters), and of the locale trees only the root and English; it drops the converter tables
(`*.cnv`), the word dictionaries of Chinese, Japanese, Thai, Lao, Khmer and Burmese (`*.dict`,
for ICU's word breaking, which nothing in fetchrun asks for: Swift's own strings break
characters without ICU), collation data beyond the root, transliterators and spelled-out
numbers.
`make release-icu` builds the library the release links with it; the package test runs the
installed binary through what reads this data.

The format (ICU's udata.cpp, "common data" with a table of contents): a header whose first
16-bit word is its size; after it a 32-bit count and `count` pairs of 32-bit offsets (name,
data), both relative to the end of the header; names are NUL-terminated ASCII, items are
16-byte aligned and in name order.
"""
import re
import struct
import sys

KEPT_LOCALES = {"root", "en", "en_US", "en_US_POSIX", "en_001", "en_150", "en_GB"}
# Locale trees: their files are named by locale (af.res, de_AT.res), next to a res_index.
LOCALE_TREES = {"", "brkitr", "coll", "curr", "lang", "rbnf", "region", "translit", "unit", "zone"}
DROPPED_TREES = {"coll", "rbnf", "translit"}
# What the dropped trees keep: the root collation (the default order, 1 MB) and their indexes.
KEPT_IN_DROPPED = {"coll/root.res", "coll/res_index.res", "coll/ucadata.icu"}
LOCALE_NAME = re.compile(r"^(root|[a-z]{2,3}(_[A-Za-z0-9]+)*)\.res$")


def read(path):
    data = open(path, "rb").read()
    header = struct.unpack_from("<H", data, 0)[0]
    if data[2:4] != b"\xda\x27":
        sys.exit(f"{path}: not an ICU data file (no 0xda27 magic)")
    count = struct.unpack_from("<I", data, header)[0]
    table = [struct.unpack_from("<II", data, header + 4 + 8 * index) for index in range(count)]
    items = []
    for index, (name_offset, data_offset) in enumerate(table):
        start = header + name_offset
        name = data[start:data.index(b"\0", start)].decode("ascii")
        end = header + (table[index + 1][1] if index + 1 < count else len(data) - header)
        items.append((name, data[header + data_offset:end]))
    return data[:header], items


def kept(name):
    """Whether fetchrun keeps the item `icudt76l/TREE/FILE` (or `icudt76l/FILE`)."""
    parts = name.split("/")[1:]
    tree, file = ("/".join(parts[:-1]), parts[-1])
    if file.endswith(".cnv") or file.endswith(".dict"):
        return False
    if tree in DROPPED_TREES:
        return f"{tree}/{file}" in KEPT_IN_DROPPED
    if tree in LOCALE_TREES and LOCALE_NAME.match(file) and file not in ("res_index.res", "pool.res"):
        return file[:-len(".res")] in KEPT_LOCALES
    return True


def write(path, header, items):
    names = b"".join(name.encode("ascii") + b"\0" for name, _ in items)
    table_size = 4 + 8 * len(items)
    offset = table_size + len(names)
    offset += -offset % 16
    table, body = [], b""
    name_offset = table_size
    for name, blob in items:
        table.append(struct.pack("<II", name_offset, offset + len(body)))
        name_offset += len(name) + 1
        body += blob
        body += b"\0" * (-len(body) % 16)
    toc = struct.pack("<I", len(items)) + b"".join(table) + names
    toc += b"\0" * (-(len(toc)) % 16)
    with open(path, "wb") as out:
        out.write(header + toc + body)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "list":
        _, items = read(sys.argv[2])
        kinds = {}
        for name, blob in items:
            parts = name.split("/")
            kind = parts[1] if len(parts) > 2 else ("*.cnv" if name.endswith(".cnv") else "(top)")
            kinds[kind] = kinds.get(kind, 0) + len(blob)
        for kind, size in sorted(kinds.items(), key=lambda pair: -pair[1]):
            print(f"{size / 1e6:8.2f} MB  {kind}")
        print(f"{sum(kinds.values()) / 1e6:8.2f} MB  in {len(items)} items")
    elif len(sys.argv) == 4 and sys.argv[1] == "filter":
        header, items = read(sys.argv[2])
        keep = [(name, blob) for name, blob in items if kept(name)]
        write(sys.argv[3], header, keep)
        before, after = sum(len(b) for _, b in items), sum(len(b) for _, b in keep)
        print(f"ICU data: {len(keep)} of {len(items)} items, {after / 1e6:.2f} MB of {before / 1e6:.2f} MB", file=sys.stderr)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
