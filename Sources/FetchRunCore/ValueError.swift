/// A reason a value was refused, phrased to follow "invalid <what> '<text>': ".
package struct ValueError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
