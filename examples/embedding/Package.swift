// swift-tools-version:6.0
import PackageDescription

// A program of its own that embeds FetchRunKit: it sees only the kit's public API.
let package = Package(
    name: "fetchrun-embedding",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "fetchrun", path: "../.."),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .executableTarget(
            name: "fetchrun-embedding",
            dependencies: [
                .product(name: "FetchRunKit", package: "fetchrun"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
