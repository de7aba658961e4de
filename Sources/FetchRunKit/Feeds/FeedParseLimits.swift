import CLinux
import Foundation

/// What one document may make the feed parser do.
///
/// libxml2 bounds nesting (256 levels: `XML_PARSE_HUGE` is never set) and a single text node
/// (10 MB), but not the work of one start tag: its check for duplicate attributes compares
/// every attribute with every earlier one, so a 1 MB element of 100,000 attributes keeps it
/// busy for many seconds. These limits close that gap and keep what a feed can make fetchrun
/// hold in memory proportional to what a feed needs.
package struct FeedParseLimits: Sendable, Equatable {
    /// Attributes (namespace declarations included) on one element. Real feeds use a few,
    /// a root element a few dozen; past this the document is refused before libxml2 sees it.
    package var attributesPerElement: Int
    /// Items read from one document; later ones are dropped with a warning.
    package var items: Int
    /// Bytes of text collected for one field; the rest is dropped (the item's fields are
    /// capped again, smaller, by ``ItemLimits``).
    package var textBytes: Int

    package init(attributesPerElement: Int = 1_000, items: Int = ItemLimits.standard.itemsPerFetch, textBytes: Int = 1 << 20) {
        self.attributesPerElement = attributesPerElement
        self.items = items
        self.textBytes = textBytes
    }

    package static let standard = FeedParseLimits()

    /// The first start tag with more than ``attributesPerElement`` attributes: its line and
    /// how many it has (counted up to the limit plus one). One pass over the bytes, jumping
    /// from `<` to `<`; comments, CDATA sections, declarations and end tags are skipped.
    func firstCrowdedElement(in bytes: UnsafeRawBufferPointer) -> (line: Int, attributes: Int)? {
        guard let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        let count = bytes.count
        var index = 0
        func skip(past terminator: StaticString, from start: Int) -> Int {
            guard start < count, let found = fetchrun_memmem(base + start, count - start, terminator.utf8Start, terminator.utf8CodeUnitCount) else { return count }
            return UnsafeRawPointer(found).assumingMemoryBound(to: UInt8.self) - base + terminator.utf8CodeUnitCount
        }
        while index < count {
            guard let found = memchr(base + index, 0x3C, count - index) else { return nil }
            let tagStart = UnsafeRawPointer(found).assumingMemoryBound(to: UInt8.self) - base
            index = tagStart + 1
            guard index < count else { return nil }
            switch base[index] {
            case UInt8(ascii: "!"):
                if index + 2 < count, base[index + 1] == UInt8(ascii: "-"), base[index + 2] == UInt8(ascii: "-") {
                    index = skip(past: "-->", from: index + 3)
                } else if index + 7 < count, base[index + 1] == UInt8(ascii: "[") {
                    index = skip(past: "]]>", from: index + 2)
                } else {
                    index = skip(past: ">", from: index)
                }
                continue
            case UInt8(ascii: "?"), UInt8(ascii: "/"):
                index = skip(past: ">", from: index)
                continue
            default:
                break
            }
            var attributes = 0
            while index < count {
                let byte = base[index]
                if byte == 0x22 || byte == 0x27 {
                    // A quoted value is jumped over at once: values are most of a tag's bytes.
                    guard let close = memchr(base + index + 1, Int32(byte), count - index - 1) else { return nil }
                    index = UnsafeRawPointer(close).assumingMemoryBound(to: UInt8.self) - base + 1
                    continue
                } else if byte == UInt8(ascii: "=") {
                    attributes += 1
                    if attributes > attributesPerElement {
                        let line = 1 + UnsafeBufferPointer(start: base, count: tagStart).reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
                        return (line, attributes)
                    }
                } else if byte == UInt8(ascii: ">") {
                    break
                }
                index += 1
            }
        }
        return nil
    }
}
