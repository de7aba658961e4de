import Foundation
import Mustache

/// The HTML part of a mail: one column that reads on a phone, its look in inline styles (many
/// clients drop `<style>`), and a dark variant for the clients that honour
/// `prefers-color-scheme` in a `<style>` block.
///
/// Per item its title linked, its source, date and author, its summary as ``MailSummary`` makes
/// it safe, and a watched selection's diff with additions and removals marked; an alert as a
/// line of its own. Items of several sources come in a section per source, with a table of
/// contents at the top once there are more than ``contentsFrom`` of them.
///
/// The template is Mustache: every `{{value}}` is HTML-escaped. The one value written raw,
/// `{{{summary}}}`, is ``MailSummary``'s output, which is built from an allow-list.
enum MailLayout {
    /// How many deliveries of two or more sources bring a table of contents.
    static let contentsFrom = 6

    static func html(_ deliveries: [Delivery], fields: [[String: String]], subject: String, settings: EmailOutput.Settings) -> String {
        var sections: [(source: String, title: String, entries: [[String: Any]])] = []
        for (delivery, fields) in zip(deliveries, fields) {
            let entry = self.entry(delivery, fields: fields, settings: settings)
            if let index = sections.firstIndex(where: { $0.source == delivery.source }) {
                sections[index].entries.append(entry)
            } else {
                sections.append((delivery.source, fields["source_title"] ?? delivery.source, [entry]))
            }
        }
        let grouped = sections.count > 1
        let context: [String: Any] = [
            "subject": subject,
            "output": settings.outputName,
            "grouped": grouped,
            "hasContents": grouped && deliveries.count >= contentsFrom,
            "contents": sections.map { ["anchor": anchor($0.source), "title": $0.title, "count": $0.entries.count] as [String: Any] },
            "sections": sections.map { ["anchor": anchor($0.source), "title": $0.title, "entries": $0.entries] as [String: Any] },
        ]
        return template.render(context)
    }

    /// The source names of `deliveries`, in their order, for a subject: three at the most, then
    /// how many more.
    static func sourceNames(_ deliveries: [Delivery], fields: [[String: String]]) -> String {
        var names: [String] = []
        for (delivery, fields) in zip(deliveries, fields) {
            let name = fields["source_title"] ?? delivery.source
            if !names.contains(name) { names.append(name) }
        }
        return names.count <= 3 ? names.joined(separator: ", ") : names.prefix(3).joined(separator: ", ") + " and \(names.count - 3) more"
    }

    private static func entry(_ delivery: Delivery, fields: [String: String], settings: EmailOutput.Settings) -> [String: Any] {
        guard delivery.kind == .item else {
            return ["alert": MailMessage.alertText(delivery.kind, fields), "failing": delivery.kind == .failing]
        }
        let link = MarkupText.webLink(fields["link"])
        var entry: [String: Any] = ["title": fields["title"] ?? "(untitled)"]
        if let link { entry["link"] = link }
        let meta = [fields["source_title"] ?? fields["source"], date(fields["published"] ?? fields["updated"], in: settings.timeZone), fields["author"]]
        entry["meta"] = meta.compactMap { $0?.isEmpty == false ? $0 : nil }.joined(separator: " · ")
        if let summary = fields["summary"], !summary.isEmpty {
            entry["summary"] = MailSummary.html(summary, baseURL: link, images: settings.images)
        }
        if let diff = fields["diff"], !diff.isEmpty {
            entry["hasDiff"] = true
            entry["diff"] = diffLines(diff)
        }
        return entry
    }

    /// A unified diff's lines (``TextDiff/lines(of:)``), each with its mark and colours; the
    /// file headers are left out.
    static func diffLines(_ diff: String) -> [[String: Any]] {
        TextDiff.lines(of: diff).compactMap { line in
            switch line.kind {
            case .header: return nil
            case .hunk: return ["text": line.text, "kind": "hunk", "style": "color:#57606a"]
            case .added: return ["text": "+ " + line.text, "kind": "added", "style": "background:#dafbe1;color:#116329"]
            case .removed: return ["text": "− " + line.text, "kind": "removed", "style": "background:#ffebe9;color:#a40e26;text-decoration:line-through"]
            case .context: return ["text": "  " + line.text, "kind": "context", "style": "color:#57606a"]
            }
        }
    }

    /// An item's date as a reader reads it, in the config's time zone: `2026-11-21 23:00 CET`.
    static func date(_ text: String?, in zone: TimeZone) -> String? {
        guard let text, let date = CalendarText.rfc3339(text) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: date)
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        let name = zone.abbreviation(for: date) ?? zone.identifier
        return "\(c.year ?? 0)-\(two(c.month))-\(two(c.day)) \(two(c.hour)):\(two(c.minute)) \(name)"
    }

    /// A fragment name for a source's section: source names are already `[a-z0-9._-]`.
    private static func anchor(_ source: String) -> String { "source-" + source }

    /// The template, parsed once; it is a constant of this file, which a test renders.
    static let template: MustacheTemplate = {
        do {
            return try MustacheTemplate(string: text)
        } catch {
            fatalError("the mail's HTML template does not parse: \(error)")
        }
    }()

    static let text = """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="color-scheme" content="light dark"><meta name="supported-color-schemes" content="light dark">
        <title>{{subject}}</title>
        <style>
        @media (prefers-color-scheme: dark) {
          .fr-page { background:#0d1117 !important; color:#e6edf3 !important; }
          .fr-card { background:#161b22 !important; border-color:#30363d !important; }
          .fr-page a { color:#58a6ff !important; }
          .fr-meta, .fr-foot { color:#8b949e !important; }
          .fr-added { background:#033a16 !important; color:#aff5b4 !important; }
          .fr-removed { background:#5d0f12 !important; color:#ffdcd7 !important; }
          .fr-summary blockquote { border-color:#30363d !important; }
        }
        </style></head>
        <body class="fr-page" style="margin:0;padding:0;background:#f6f8fa;color:#1f2328;font-family:-apple-system,'Segoe UI',Roboto,Helvetica,Arial,'Noto Sans',sans-serif;font-size:16px;line-height:1.5;word-wrap:break-word">
        <div style="max-width:640px;margin:0 auto;padding:16px">
        <h1 dir="auto" style="font-size:20px;line-height:1.3;margin:0 0 16px">{{subject}}</h1>
        {{#hasContents}}<ul style="margin:0 0 16px;padding:0 0 0 20px">{{#contents}}<li><a href="#{{anchor}}" style="color:#0b57d0">{{title}}</a> ({{count}})</li>{{/contents}}</ul>{{/hasContents}}
        {{#sections}}
        {{#grouped}}<h2 id="{{anchor}}" dir="auto" style="font-size:17px;margin:24px 0 8px">{{title}}</h2>{{/grouped}}
        {{#entries}}
        {{#alert}}<div class="fr-card" dir="auto" style="background:#ffffff;border:1px solid #d0d7de;border-left:4px solid {{#failing}}#cf222e{{/failing}}{{^failing}}#1a7f37{{/failing}};border-radius:6px;padding:12px 16px;margin:0 0 12px">{{alert}}</div>{{/alert}}
        {{^alert}}<div class="fr-card" style="background:#ffffff;border:1px solid #d0d7de;border-radius:6px;padding:12px 16px;margin:0 0 12px">
        <h3 dir="auto" style="font-size:17px;line-height:1.35;margin:0 0 4px">{{#link}}<a href="{{link}}" style="color:#0b57d0;text-decoration:none">{{title}}</a>{{/link}}{{^link}}{{title}}{{/link}}</h3>
        {{#meta}}<div class="fr-meta" style="color:#59636e;font-size:13px;margin:0 0 8px">{{meta}}</div>{{/meta}}
        {{#summary}}<div class="fr-summary" dir="auto" style="font-size:15px">{{{summary}}}</div>{{/summary}}
        {{#hasDiff}}<div style="font-family:ui-monospace,'SFMono-Regular',Menlo,Consolas,monospace;font-size:13px;white-space:pre-wrap;word-break:break-word;margin:8px 0 0">{{#diff}}<div class="fr-{{kind}}" style="{{style}};padding:0 4px">{{text}}</div>{{/diff}}</div>{{/hasDiff}}
        </div>{{/alert}}
        {{/entries}}
        {{/sections}}
        <p class="fr-foot" style="color:#59636e;font-size:12px;margin:24px 0 0">Sent by fetchrun through the output “{{output}}”.</p>
        </div></body></html>
        """
}
