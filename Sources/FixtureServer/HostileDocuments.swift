/// Documents that try to hurt a feed parser.
enum HostileDocuments {
    /// Unclosed elements and a stray `&`: recoverable or not, never a crash.
    static let malformed = """
        <?xml version="1.0"?>
        <rss version="2.0"><channel><title>Broken & proud</title>
        <item><title>First</title><link>http://example.org/1</link></item>
        <item><title>Second <b>bold</title>
        """

    /// An external entity that would pull a local file into an item's title.
    static let externalEntity = """
        <?xml version="1.0"?>
        <!DOCTYPE rss [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
        <rss version="2.0"><channel><title>XXE</title>
        <item><title>Leak: &secret;</title><guid>xxe-1</guid></item>
        </channel></rss>
        """

    /// Nested entities that expand to gigabytes when substituted.
    static let billionLaughs = """
        <?xml version="1.0"?>
        <!DOCTYPE lolz [
        <!ENTITY lol "lol">
        <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
        <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
        <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
        <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
        <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
        <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
        <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
        <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
        <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
        ]>
        <rss version="2.0"><channel><title>Laughs</title>
        <item><title>&lol9;</title><guid>lol-1</guid></item>
        </channel></rss>
        """

    /// Declares UTF-8 but is Latin-1: "Café" with a lone 0xE9 byte.
    static let latin1DeclaredAsUTF8: [UInt8] = {
        let head = Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\"><channel><title>Caf".utf8)
        let tail = Array("</title><item><title>Men".utf8) + [0xFC] + Array("</title><guid>menu-1</guid></item></channel></rss>".utf8)
        return head + [0xE9] + tail
    }()
}
