/// How to make one kind of adapter: what `fetchrun adapters` lists and what the config
/// loader calls for a source of that `type`.
public struct AdapterDescriptor: Sendable {
    public var type: String
    public var summary: String
    public var options: [AdapterOption]
    /// Where it comes from, such as "built-in".
    public var origin: String
    let make: @Sendable (AdapterOptions) throws -> any SourceAdapter

    public init<Adapter: SourceAdapter>(_ adapter: Adapter.Type, origin: String = "built-in") {
        self.type = Adapter.type
        self.summary = Adapter.summary
        self.options = Adapter.options
        self.origin = origin
        self.make = { try Adapter(options: $0) }
    }
}

/// The adapters a config may name, looked up by `type`.
public struct AdapterRegistry: Sendable {
    /// The adapters compiled into fetchrun. A new built-in adapter is one line here.
    public static let builtIn = AdapterRegistry([
        AdapterDescriptor(TrafficAdapter.self),
        AdapterDescriptor(RandomNewsAdapter.self),
        AdapterDescriptor(RSSAdapter.self),
    ])

    public private(set) var descriptors: [AdapterDescriptor]

    public init(_ descriptors: [AdapterDescriptor]) {
        self.descriptors = descriptors
    }

    public func descriptor(for type: String) -> AdapterDescriptor? {
        descriptors.first { $0.type == type }
    }

    /// Every `type` it knows, sorted, for "unknown adapter type" messages.
    public var typeNames: [String] {
        descriptors.map(\.type).sorted()
    }

    /// Adds or replaces an adapter, as an embedding program would for its own.
    public mutating func register(_ descriptor: AdapterDescriptor) {
        descriptors.removeAll { $0.type == descriptor.type }
        descriptors.append(descriptor)
    }
}
