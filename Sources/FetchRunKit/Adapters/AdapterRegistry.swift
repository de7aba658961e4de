/// How to make one kind of adapter: what `fetchrun adapters` lists and what the config
/// loader calls for a source of that `type`.
package struct AdapterDescriptor: Sendable {
    package var type: String
    package var summary: String
    package var options: [AdapterOption] {
        didSet { optionNames = Set(options.map(\.name)) }
    }
    /// The names of ``options``, made once: every source of the type is checked against them.
    private(set) var optionNames: Set<String>
    /// Where it comes from: "built-in", or the plugin's path.
    package var origin: String
    /// Options beyond ``options`` go to the adapter instead of being reported as unknown
    /// (`exec`, and plugins that do not describe their options).
    package var acceptsUndeclaredOptions: Bool
    /// Why no source can use this adapter as it is (a plugin whose `--describe` answer is not
    /// a valid schema); reported as a config error where a source names the type.
    package var problem: String?
    let make: @Sendable (AdapterOptions) throws -> any SourceAdapter

    package init<Adapter: ConfigurableAdapter>(_ adapter: Adapter.Type, origin: String = "built-in", acceptsUndeclaredOptions: Bool = false) {
        self.type = Adapter.type
        self.summary = Adapter.summary
        self.options = Adapter.options
        self.optionNames = Set(Adapter.options.map(\.name))
        self.origin = origin
        self.acceptsUndeclaredOptions = acceptsUndeclaredOptions
        self.make = { try Adapter(options: $0) }
    }

    /// An external plugin, `fetchrun-adapter-<type>` at `path`, with the options its
    /// `--describe` lists (any options when it describes none).
    package init(plugin path: String, type: String, answer: PluginDescription.Answer) {
        self.type = type
        self.origin = path
        switch answer {
        case .described(let description):
            summary = description.summary
            options = description.options
            acceptsUndeclaredOptions = false
        case .none:
            summary = "external adapter (no --describe)"
            options = []
            acceptsUndeclaredOptions = true
        case .invalid(let reason):
            summary = "external adapter (invalid --describe answer)"
            options = []
            acceptsUndeclaredOptions = true
            problem = "plugin \(path): \(reason)"
        }
        optionNames = Set(options.map(\.name))
        self.make = { options in ExternalAdapter(executable: path, options: options.jsonOptions(), configDirectory: options.configDirectory) }
    }
}

/// The adapters a config may name, looked up by `type`.
public struct AdapterRegistry: Sendable {
    /// The adapters compiled into fetchrun. A new built-in adapter is one line here.
    public static let builtIn = AdapterRegistry([
        AdapterDescriptor(TrafficAdapter.self),
        AdapterDescriptor(RandomNewsAdapter.self),
        AdapterDescriptor(RSSAdapter.self),
        AdapterDescriptor(JSONAdapter.self),
        AdapterDescriptor(PageAdapter.self),
        AdapterDescriptor(ExternalAdapter.self, acceptsUndeclaredOptions: true),
        // new-adapter: new built-in adapters go above this line
    ])

    package private(set) var descriptors: [AdapterDescriptor]

    package init(_ descriptors: [AdapterDescriptor]) {
        self.descriptors = descriptors
    }

    package func descriptor(for type: String) -> AdapterDescriptor? {
        descriptors.first { $0.type == type }
    }

    /// A built-in adapter, or else the plugin `fetchrun-adapter-<type>` from the config's
    /// `plugins/` folder or `PATH` (asked for its options with `--describe`).
    package func descriptor(for type: String, configDirectory: String, environment: [String: String]) -> AdapterDescriptor? {
        if let builtIn = descriptor(for: type) { return builtIn }
        guard ConfigLoader.isValidName(type), let path = PluginLocator.find(type, configDirectory: configDirectory, environment: environment) else { return nil }
        return AdapterDescriptor(plugin: path, type: type, answer: PluginDescription.ask(path, environment: environment))
    }

    /// The built-in adapters and every plugin found for a config in `configDirectory`, each
    /// plugin given up to `describeTimeout` to describe itself: `fetchrun adapters` asks for the
    /// descriptions and can wait longer than a config load, and an interpreter's cold start on
    /// a loaded machine can take more than the load's 0.7 s.
    package func allDescriptors(configDirectory: String, environment: [String: String], describeTimeout: Duration = .seconds(5)) -> [AdapterDescriptor] {
        descriptors + PluginLocator.all(configDirectory: configDirectory, environment: environment)
            .filter { plugin in descriptor(for: plugin.type) == nil }
            .map { AdapterDescriptor(plugin: $0.path, type: $0.type, answer: PluginDescription.ask($0.path, environment: environment, timeout: describeTimeout)) }
    }

    /// Every `type` it knows, sorted, for "unknown adapter type" messages.
    public var typeNames: [String] {
        descriptors.map(\.type).sorted()
    }

    /// Adds or replaces (by its `type`) an adapter, as an embedding program would for its own,
    /// so that a config loaded with this registry may name it.
    public mutating func register<Adapter: ConfigurableAdapter>(_ adapter: Adapter.Type) {
        register(AdapterDescriptor(adapter))
    }

    /// Adds or replaces the adapter `descriptor` describes.
    package mutating func register(_ descriptor: AdapterDescriptor) {
        descriptors.removeAll { $0.type == descriptor.type }
        descriptors.append(descriptor)
    }
}
