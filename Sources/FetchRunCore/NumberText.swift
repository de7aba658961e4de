/// Numbers as people write them on pages: `1.299,00 €`, `$1,299.00`, `1 299 €`, `CHF 1'299.–`,
/// `1,299`, `-3,5 %`. The first number in a text is read; which mark separates thousands and
/// which the decimals is said by ``Format`` or, without one, guessed from the number itself.
package enum NumberText {
    /// How a text writes its numbers (`number_format:`).
    package enum Format: String, Sendable, Hashable, CaseIterable {
        /// `1,299.00`
        case en
        /// `1.299,00`
        case de
        /// `1 299,00` (a space, a no-break space or a narrow one between thousands)
        case fr
        /// `1'299.00` (and `1'299.–` for whole francs)
        case ch

        var decimalMark: Character { self == .de || self == .fr ? "," : "." }
    }

    /// The first number in `text`, or `nil` when it has none.
    ///
    /// Without `format`: the last of `.` and `,` is the decimal mark when both appear, or when
    /// it is followed by other than exactly three digits (`12,5`, `3.14`); a lone one followed
    /// by exactly three digits separates thousands (`1,299`, `1.299` are 1299). Spaces and `'`
    /// between groups of three digits are thousands separators in every format. `.–` and `.-`
    /// after a whole number end it (`1'299.–`).
    package static func firstNumber(in text: String, format: Format? = nil) -> Double? {
        let characters = Array(text)
        var index = 0
        while index < characters.count {
            let character = characters[index]
            if character.isASCII, character.isNumber {
                let negative = index > 0 && (characters[index - 1] == "-" || characters[index - 1] == "−")
                    && (index < 2 || !(characters[index - 2].isLetter || characters[index - 2].isNumber))
                let (value, _) = number(characters, from: index, format: format)
                return negative ? -value : value
            }
            index += 1
        }
        return nil
    }

    /// The number whose first digit is at `start`: its value and where it ends.
    private static func number(_ characters: [Character], from start: Int, format: Format?) -> (Double, Int) {
        // The run of digits and the marks between them, as written: "1.299,00", "1 299".
        var run: [Character] = []
        var index = start
        while index < characters.count {
            let character = characters[index]
            if character.isASCII, character.isNumber {
                run.append(character)
                index += 1
            } else if [".", ",", "'", "’", " ", "\u{00A0}", "\u{202F}"].contains(character), index + 1 < characters.count,
                      characters[index + 1].isASCII, characters[index + 1].isNumber {
                run.append(character)
                index += 1
            } else {
                break
            }
        }
        // Groups between marks: a space or an apostrophe only ever groups thousands; one
        // followed by other than three digits ends the number before it.
        var groups: [(mark: Character?, digits: String)] = [(nil, "")]
        for character in run {
            if character.isNumber {
                groups[groups.count - 1].digits.append(character)
            } else {
                groups.append((character, ""))
            }
        }
        if let cut = groups.indices.dropFirst().first(where: { [" ", "\u{00A0}", "\u{202F}", "'", "’"].contains(groups[$0].mark!) && groups[$0].digits.count != 3 }) {
            groups.removeSubrange(cut...)
        }
        let decimalMark = decimalMark(of: groups, format: format)
        var whole = "", fraction = ""
        var inFraction = false
        for (position, group) in groups.enumerated() {
            if position > 0, group.mark == decimalMark, position == groups.count - 1 {
                inFraction = true
            }
            if inFraction { fraction += group.digits } else { whole += group.digits }
        }
        let value = Double(whole + (fraction.isEmpty ? "" : "." + fraction)) ?? 0
        return (value, index)
    }

    /// Which mark, if any, is the decimal one: the format's, or guessed from the last mark.
    private static func decimalMark(of groups: [(mark: Character?, digits: String)], format: Format?) -> Character? {
        guard groups.count > 1, let last = groups.last?.mark, last == "." || last == "," else { return nil }
        if let format { return last == format.decimalMark ? last : nil }
        let marks = Set(groups.compactMap(\.mark).filter { $0 == "." || $0 == "," })
        if marks.count > 1 { return last }
        // One kind of mark: thousands when every group after it has three digits and it repeats
        // or stands once before three digits (1,299 and 1.299.000); else the decimal mark.
        let afterMarks = groups.dropFirst().filter { $0.mark == last }
        if afterMarks.count > 1 { return nil }
        return groups.last!.digits.count == 3 ? nil : last
    }
}
