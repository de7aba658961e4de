#!/usr/bin/env python3
"""What each part of the release binary costs: the bytes a stripped `fetchrun` keeps (the
sections the program loads), summed by where the linker took them from.

Usage: Benchmarks/binary-size.py MAP [MAP ...]

MAP is lld's link map of a release build (`make size` writes two, with the toolchain's ICU and
with the trimmed one, and prints their table). Input sections are attributed to a part by the archive or object they
came from: ICU's data (one member of lib_FoundationICU.a) apart from ICU's code, Foundation,
the Swift runtime, BoringSSL, SwiftNIO and its kin, PostgresNIO, Hummingbird, the other Swift
packages, and fetchrun's own targets. Debug information, symbol tables and other sections a
strip removes are not counted. With two maps, a column each and the difference.
"""
import collections
import re
import sys

KEPT = re.compile(r"^\.(text|rodata|data|bss|eh_frame|eh_frame_hdr|gcc_except_table|init_array|fini_array|tbss|tdata|got|relr|rela|dynsym|dynstr|gnu|hash|plt|init|fini)|^swift5_|^__")

PARTS = [
    ("ICU data", re.compile(r"lib_FoundationICU\.a\(icu_packaged_data")),
    ("ICU code", re.compile(r"lib_FoundationICU\.a\(")),
    ("Foundation (and CoreFoundation)", re.compile(r"lib(Foundation\w*|CoreFoundation|_Foundation\w*|_CF\w*)\.a\(")),
    ("Swift runtime and standard library", re.compile(r"lib(swift\w*|dispatch|BlocksRuntime)\.a\(|swiftrt\.o")),
    ("BoringSSL (swift-nio-ssl, swift-crypto)", re.compile(r"/(CNIOBoringSSL|CCryptoBoringSSL)\w*\.build/")),
    ("SwiftNIO, its SSL, HTTP/2 and extras", re.compile(r"/(NIO\w*|_NIO\w*|CNIO\w*)\.build/")),
    ("PostgresNIO", re.compile(r"/(PostgresNIO|_ConnectionPoolModule)\.build/")),
    ("Hummingbird, Mustache, WebSocket", re.compile(r"/(Hummingbird\w*|Mustache|WS\w*|CompressNIO|CZlib_\w*)\.build/")),
    ("Crypto, certificates, ASN.1", re.compile(r"/(Crypto\w*|_Crypto\w*|X509|SwiftASN1|_CertificateInternals)\.build/")),
    ("fetchrun's own targets", re.compile(r"/(FetchRun\w*|fetchrun|CEpoll)\.build/")),
    ("other Swift packages", re.compile(r"\.build/")),
    ("system and linker", re.compile(r".")),
]


def read(path):
    """Bytes of kept output sections, by part. The map's columns are found from its header:
    a line whose fifth field starts under `Out` names an output section, one under `In` an
    input section (`FILE:(SECTION)`); deeper ones are symbols."""
    sizes = collections.Counter()
    output = ""
    with open(path, encoding="utf-8", errors="replace") as lines:
        header = next(lines)
        out_column, in_column = header.index("Out"), header.index("In ")
        for line in lines:
            fields = line.split()
            if len(fields) < 5:
                continue
            column = line.index(fields[4], len(line) - len(line.lstrip()) + sum(len(f) for f in fields[:4]))
            if column < in_column:
                output = fields[4]
                continue
            if column >= in_column + 8 or not KEPT.search(output):
                continue
            match = re.match(r"(.*):\(([^)]*)\)$", " ".join(fields[4:]))
            if not match:
                continue
            part = next(name for name, pattern in PARTS if pattern.search(match.group(1)))
            sizes[part] += int(fields[2], 16)
    return sizes


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    maps = [read(path) for path in sys.argv[1:]]
    names = [name for name, _ in PARTS if any(m[name] for m in maps)]
    header = "| part | " + " | ".join(f"MB ({path.rsplit('/', 1)[-1]})" for path in sys.argv[1:]) + (" | difference |" if len(maps) == 2 else " |")
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for name in names + ["total"]:
        values = [sum(m.values()) if name == "total" else m[name] for m in maps]
        row = f"| {name} | " + " | ".join(f"{value / 1e6:.2f}" for value in values)
        if len(maps) == 2:
            row += f" | {(values[1] - values[0]) / 1e6:+.2f}"
        print(row + " |")


if __name__ == "__main__":
    main()
