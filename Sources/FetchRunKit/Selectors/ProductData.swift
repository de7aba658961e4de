import Foundation

/// What a shop page publishes about its products for search engines: schema.org `Product` with
/// its `Offer`s (or an `AggregateOffer`), from the page's JSON-LD and microdata — `extract:
/// product` watches this instead of a selector.
///
/// Its ``text`` puts the price first, so that `notify_when: { value: … }` reads the price (the
/// lowest, when there are several offers), then the availability, the name and the SKU.
package struct ProductData: Sendable, Equatable {
    package struct Offer: Sendable, Equatable {
        package var price: Double?
        /// An `AggregateOffer`'s range and count.
        package var highPrice: Double?
        package var count: Int?
        package var currency: String?
        /// The schema.org term without its address: `InStock`, `OutOfStock`, `PreOrder`.
        package var availability: String?
        package var sku: String?
    }

    package var name: String?
    package var sku: String?
    package var offers: [Offer] = []

    /// The JSON-LD documents read at most, and their size: a page is anyone's to write.
    static let maximumScripts = 32
    static let maximumScriptBytes = 1 << 20
    /// Products kept per page.
    static let maximumProducts = 20

    /// Every product the page describes: from JSON-LD, else from microdata.
    package static func extract(from page: HTMLDocument) -> [ProductData] {
        let fromJSON = jsonLD(in: page)
        return Array((fromJSON.isEmpty ? microdata(in: page) : fromJSON).prefix(maximumProducts))
    }

    /// The lines a change is found in.
    package var text: String {
        var lines: [String] = []
        let priced = offers.filter { $0.price != nil }
        if let lowest = priced.min(by: { $0.price! < $1.price! }) {
            var line = "price: \(Self.amount(lowest.price!))" + (lowest.currency.map { " \($0)" } ?? "")
            if let high = lowest.highPrice, let count = lowest.count {
                line += " (lowest of \(count) offers, up to \(Self.amount(high)))"
            } else if let high = lowest.highPrice {
                line += " (up to \(Self.amount(high)))"
            } else if priced.count > 1 {
                line += " (lowest of \(priced.count) offers)"
            }
            lines.append(line)
        }
        let availabilities = offers.compactMap(\.availability)
        if !availabilities.isEmpty { lines.append("availability: " + Array(Set(availabilities)).sorted().joined(separator: ", ")) }
        if let name { lines.append("name: \(name)") }
        if let sku = sku ?? offers.lazy.compactMap(\.sku).first { lines.append("sku: \(sku)") }
        if offers.count > 1 {
            for (index, offer) in offers.enumerated() {
                let parts = [offer.price.map { Self.amount($0) + (offer.currency.map { " \($0)" } ?? "") }, offer.availability, offer.sku].compactMap { $0 }
                lines.append("offer \(index + 1): " + parts.joined(separator: ", "))
            }
        }
        return lines.joined(separator: "\n")
    }

    static func amount(_ value: Double) -> String {
        String(format: "%.2f", value)
    }

    // MARK: JSON-LD

    private static func jsonLD(in page: HTMLDocument) -> [ProductData] {
        var products: [ProductData] = []
        var read = 0
        for index in page.nodes.indices where page.nodes[index].name == "script" && read < maximumScripts {
            guard page.nodes[index].attribute("type")?.lowercased().hasPrefix("application/ld+json") == true else { continue }
            read += 1
            let text = (index + 1..<page.nodes[index].end).map { page.nodes[$0].text }.joined()
            guard text.utf8.count <= maximumScriptBytes, let value = try? JSONReader.value(of: Data(text.utf8)) else { continue }
            collect(value, into: &products, depth: 0)
        }
        return products
    }

    /// Products anywhere in a JSON-LD value: at its top, in a list, in `@graph`, or nested.
    private static func collect(_ value: JSONValue, into products: inout [ProductData], depth: Int) {
        guard depth < 16, products.count < maximumProducts else { return }
        switch value {
        case .array(let values):
            for value in values { collect(value, into: &products, depth: depth + 1) }
        case .object(let members):
            if types(of: members).contains("Product") {
                products.append(product(members))
            } else {
                for value in members.values { collect(value, into: &products, depth: depth + 1) }
            }
        default:
            break
        }
    }

    private static func types(of members: [String: JSONValue]) -> [String] {
        switch members["@type"] {
        case .string(let type)?: [term(type)]
        case .array(let types)?: types.compactMap(\.stringValue).map(term)
        default: []
        }
    }

    private static func product(_ members: [String: JSONValue]) -> ProductData {
        var product = ProductData(name: text(members["name"]), sku: text(members["sku"]))
        var offers: [JSONValue] = []
        switch members["offers"] {
        case .array(let values)?: offers = values
        case let value?: offers = [value]
        case nil: break
        }
        for case .object(let offer) in offers.prefix(100) {
            let specification: [String: JSONValue]? = if case .object(let spec)? = offer["priceSpecification"] { spec } else { nil }
            let isAggregate = types(of: offer).contains("AggregateOffer")
            product.offers.append(Offer(
                price: number(offer[isAggregate ? "lowPrice" : "price"]) ?? number(offer["price"]) ?? specification.flatMap { number($0["price"]) },
                highPrice: isAggregate ? number(offer["highPrice"]) : nil,
                count: isAggregate ? number(offer["offerCount"]).map(count) : nil,
                currency: text(offer["priceCurrency"]) ?? specification.flatMap { text($0["priceCurrency"]) },
                availability: text(offer["availability"]).map(term), sku: text(offer["sku"])
            ))
        }
        return product
    }

    private static func text(_ value: JSONValue?) -> String? {
        guard let text = value?.scalarText?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else { return nil }
        return TerminalText.safe(text, maximumLength: 300)
    }

    private static func number(_ value: JSONValue?) -> Double? {
        switch value {
        case .number(let exact)?: exact.value.isFinite ? exact.value : nil
        case .string(let text)?: NumberText.firstNumber(in: text)
        default: nil
        }
    }

    /// A count from a page, which may say 1e300 or -5: within 0...1,000,000.
    private static func count(_ value: Double) -> Int {
        Int(min(max(value, 0), 1_000_000))
    }

    /// `https://schema.org/InStock` → `InStock`.
    private static func term(_ text: String) -> String {
        String(text.split(separator: "/").last ?? Substring(text))
    }

    // MARK: Microdata

    private static func microdata(in page: HTMLDocument) -> [ProductData] {
        var products: [ProductData] = []
        for index in page.nodes.indices where products.count < maximumProducts && isScope(page, index, of: "Product") {
            var product = ProductData()
            var offer: (index: Int, value: Offer)?
            for element in page.elements(below: index) {
                guard let prop = page.nodes[element].attribute("itemprop") else { continue }
                let owner = scope(of: element, in: page)
                if prop == "offers", page.nodes[element].attribute("itemscope") != nil, owner == index {
                    if let offer { product.offers.append(offer.value) }
                    offer = (element, Offer())
                    continue
                }
                let value = microdataValue(element, in: page)
                if owner == index {
                    switch prop {
                    case "name": product.name = product.name ?? value
                    case "sku": product.sku = product.sku ?? value
                    default: break
                    }
                } else if let current = offer, owner == current.index {
                    switch prop {
                    case "price", "lowPrice": offer?.value.price = value.flatMap { NumberText.firstNumber(in: $0) }
                    case "highPrice": offer?.value.highPrice = value.flatMap { NumberText.firstNumber(in: $0) }
                    case "offerCount": offer?.value.count = value.flatMap { NumberText.firstNumber(in: $0) }.map(count)
                    case "priceCurrency": offer?.value.currency = value
                    case "availability": offer?.value.availability = value.map(term)
                    case "sku": offer?.value.sku = value
                    default: break
                    }
                }
            }
            if let offer { product.offers.append(offer.value) }
            products.append(product)
        }
        return products
    }

    private static func isScope(_ page: HTMLDocument, _ index: Int, of type: String) -> Bool {
        let node = page.nodes[index]
        return node.isElement && node.attribute("itemscope") != nil && node.attribute("itemprop") == nil
            && (node.attribute("itemtype")?.split(separator: " ").contains { term(String($0)) == type } ?? false)
    }

    /// The nearest element above `index` that opens an item (`itemscope`).
    private static func scope(of index: Int, in page: HTMLDocument) -> Int? {
        var current = page.parentElement(of: index)
        while let element = current {
            if page.nodes[element].attribute("itemscope") != nil { return element }
            current = page.parentElement(of: element)
        }
        return nil
    }

    private static func microdataValue(_ element: Int, in page: HTMLDocument) -> String? {
        let node = page.nodes[element]
        let raw = node.attribute("content") ?? node.attribute("href") ?? node.attribute("value") ?? page.line(of: element, maximumBytes: 600)
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : TerminalText.safe(text, maximumLength: 300)
    }
}
