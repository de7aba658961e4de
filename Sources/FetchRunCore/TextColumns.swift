/// A text table's columns, counted in characters.
///
/// Foundation's `padding(toLength:withPad:startingAt:)` does the same through NSString, in
/// UTF-16 units, at several times the cost — and a run's report pads a line per source,
/// `validate` a row per source.
extension String {
    /// The string cut or padded with spaces at the end to exactly `width` characters.
    package func column(_ width: Int) -> String {
        let length = count
        if length == width { return self }
        if length > width { return String(prefix(max(0, width))) }
        return self + String(repeating: " ", count: width - length)
    }

    /// The string padded at the start to at least `width` characters; a longer one whole.
    package func leftPadded(_ width: Int, with pad: Character = " ") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
