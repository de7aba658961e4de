// swift-tools-version:6.0
import PackageDescription

// A program of its own that embeds FetchRunKit: it sees only the kit's public API.
let package = Package(
    name: "fetchrun-embedding",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "fetchrun", path: "../.."),
    ],
    targets: [
        .executableTarget(
            name: "fetchrun-embedding",
            dependencies: [.product(name: "FetchRunKit", package: "fetchrun")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
