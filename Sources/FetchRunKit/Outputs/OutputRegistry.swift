/// The output types a config may name, looked up by `type`.
public struct OutputRegistry: Sendable {
    /// The outputs compiled into fetchrun. A new built-in output is one line here.
    public static let builtIn = OutputRegistry([CommandOutput.self, WebhookOutput.self, EmailOutput.self, NtfyOutput.self, GotifyOutput.self, SlackOutput.self, DiscordOutput.self, TelegramOutput.self, MatrixOutput.self, FeedFileOutput.self])

    public private(set) var types: [any ConfigurableOutput.Type]

    public init(_ types: [any ConfigurableOutput.Type]) {
        self.types = types
    }

    public func type(named name: String) -> (any ConfigurableOutput.Type)? {
        types.first { $0.type == name }
    }

    /// Every `type` it knows, sorted, for "unknown output type" messages.
    public var typeNames: [String] {
        types.map { $0.type }.sorted()
    }

    /// Adds or replaces an output type, as an embedding program would for its own.
    public mutating func register(_ type: any ConfigurableOutput.Type) {
        types.removeAll { $0.type == type.type }
        types.append(type)
    }
}
