import Mustache

/// The dashboard's pages as Mustache templates, compiled into the binary.
///
/// Every value is written `{{value}}`, which HTML-escapes it (`<`, `>`, `&`, `"`, `'`) for text
/// and for the double-quoted attributes it appears in; no template writes a value unescaped
/// (`{{{…}}}` or `{{& …}}`), and a test keeps it so. Links are only given values that
/// ``DashboardText/link(_:)`` let through (`http:` and `https:`), or paths the dashboard made.
/// Nothing is inline — no `style` attribute, no `<script>` body, no event handler — so the
/// page keeps to `Content-Security-Policy: default-src 'self'`.
enum DashboardTemplates {
    static let header = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="same-origin">
        <title>{{title}} · fetchrun</title>
        <link rel="stylesheet" href="/assets/dashboard.css">
        <link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
        <link rel="alternate" type="application/atom+xml" title="fetchrun: all changes" href="/feeds/all.atom">
        <script src="/assets/dashboard.js" defer></script>
        </head>
        <body>
        <a class="skip" href="#main">Skip to the content</a>
        <header class="top">
        <span class="brand">fetchrun</span>
        <nav aria-label="Pages">
        <a href="/"{{#onSources}} aria-current="page"{{/onSources}}>Sources</a>
        <a href="/outputs"{{#onOutputs}} aria-current="page"{{/onOutputs}}>Outputs</a>
        <a href="/feeds/all.atom">Feed of changes</a>
        </nav>
        </header>
        <main id="main" tabindex="-1">
        {{#notice}}<p class="notice" role="status">{{notice}}</p>{{/notice}}

        """

    static let footer = """
        </main>
        <footer><p>Shown at <time datetime="{{now.iso}}">{{now.text}}</time>. fetchrun {{version}}</p></footer>
        </body>
        </html>

        """

    static let sources = """
        {{> header}}
        <h1>Sources</h1>
        <section class="totals" aria-label="Totals">
        <p><a href="/"><strong>{{totals.sources}}</strong> sources</a></p>
        <p class="ok"><strong>{{totals.ok}}</strong> ok</p>
        <p class="failing"><a href="/?failing=1"><strong>{{totals.failing}}</strong> failing</a></p>
        <p class="never"><strong>{{totals.neverFetched}}</strong> never fetched</p>
        </section>
        <form class="filters" method="get" action="/" role="search">
        <label for="filter-text">Name, type, URL or tag</label>
        <input id="filter-text" name="q" type="search" value="{{query.text}}" autocomplete="off">
        <label for="filter-tag">Tag</label>
        <select id="filter-tag" name="tag">
        <option value="">any</option>
        {{#tags}}<option value="{{name}}"{{#selected}} selected{{/selected}}>{{name}}</option>
        {{/tags}}
        </select>
        <label><input type="checkbox" name="failing" value="1"{{#query.failingOnly}} checked{{/query.failingOnly}}> failing only</label>
        {{#query.sorted}}<input type="hidden" name="sort" value="{{query.sort}}">{{/query.sorted}}
        {{#query.descending}}<input type="hidden" name="order" value="desc">{{/query.descending}}
        <button type="submit">Filter</button>
        </form>
        <p class="count" aria-live="polite">{{matching}} of {{totals.sources}} sources{{#paged}}, page {{page}} of {{pages}}{{/paged}}</p>
        <div class="scroll">
        <table class="sources" data-refresh="10">
        <caption class="hidden">Sources, sorted by {{query.sortTitle}}</caption>
        <thead><tr>
        {{#columns}}<th scope="col"{{#sorted}} aria-sort="{{sorted}}"{{/sorted}}><a href="{{href}}">{{title}}</a></th>
        {{/columns}}
        <th scope="col">Last error</th>
        </tr></thead>
        <tbody>
        {{#rows}}
        <tr class="{{health.class}}">
        <th scope="row"><a href="{{href}}">{{name}}</a>{{#url}}<span class="url">{{url}}</span>{{/url}}{{#hasTags}}<span class="tags">{{#tags}}<a class="tag" href="{{href}}">{{name}}</a> {{/tags}}</span>{{/hasTags}}</th>
        <td>{{type}}</td>
        <td><span class="health {{health.class}}">{{health.text}}</span></td>
        <td>{{#checked}}<time datetime="{{iso}}" title="{{text}}">{{relative}}</time>{{/checked}}{{^checked}}never{{/checked}}</td>
        <td>{{#changed}}<time datetime="{{iso}}" title="{{text}}">{{relative}}</time>{{/changed}}{{^changed}}—{{/changed}}</td>
        <td>{{#next}}<time datetime="{{iso}}" title="{{text}}">{{relative}}</time>{{/next}}{{^next}}—{{/next}}</td>
        <td class="number">{{failures}}</td>
        <td class="error">{{error}}</td>
        </tr>
        {{/rows}}
        {{^rows}}<tr><td colspan="8">No source matches.</td></tr>{{/rows}}
        </tbody>
        </table>
        </div>
        {{#paged}}
        <nav class="pages" aria-label="Pages of sources">
        {{#previous}}<a rel="prev" href="{{previous}}">← Previous</a>{{/previous}}
        <span>Page {{page}} of {{pages}}</span>
        {{#next}}<a rel="next" href="{{next}}">Next →</a>{{/next}}
        </nav>
        {{/paged}}
        {{> footer}}
        """

    static let source = """
        {{> header}}
        <p class="crumbs"><a href="/">Sources</a> /</p>
        <h1>{{name}} <span class="health {{health.class}}">{{health.text}}</span></h1>
        <section class="settings" aria-labelledby="settings-title">
        <h2 id="settings-title">Settings</h2>
        <dl>
        <dt>Type</dt><dd>{{type}}</dd>
        {{#url}}<dt>URL</dt><dd>{{#href}}<a href="{{href}}" rel="noopener noreferrer nofollow">{{text}}</a>{{/href}}{{^href}}<code>{{text}}</code>{{/href}}</dd>{{/url}}
        <dt>Interval</dt><dd>{{interval}}</dd>
        <dt>Deadline</dt><dd>{{deadline}}</dd>
        {{#hasTags}}<dt>Tags</dt><dd>{{#tags}}<a class="tag" href="{{href}}">{{name}}</a> {{/tags}}</dd>{{/hasTags}}
        <dt>Enabled</dt><dd>{{enabled}}</dd>
        <dt>History kept</dt><dd>{{history}}</dd>
        <dt>Last checked</dt><dd>{{#checked}}<time datetime="{{iso}}">{{text}}</time> ({{relative}}){{/checked}}{{^checked}}never{{/checked}}</dd>
        <dt>Last change</dt><dd>{{#changed}}<time datetime="{{iso}}">{{text}}</time> ({{relative}}){{/changed}}{{^changed}}—{{/changed}}</dd>
        <dt>Next check</dt><dd>{{#next}}<time datetime="{{iso}}">{{text}}</time> ({{relative}}){{/next}}{{^next}}—{{/next}}</dd>
        <dt>Failures in a row</dt><dd>{{failures}}</dd>
        {{#error}}<dt>Last error</dt><dd class="error">{{error}}</dd>{{/error}}
        {{#moved}}<dt>Moved</dt><dd>{{moved}}</dd>{{/moved}}
        <dt>Feed of its changes</dt><dd><a href="{{feed}}.atom">Atom</a> · <a href="{{feed}}.json">JSON Feed</a></dd>
        </dl>
        {{#actions}}
        <form method="post" action="{{checkAction}}" class="action">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit">Check now</button>
        </form>
        {{/actions}}
        </section>
        <section aria-labelledby="fetches-title">
        <h2 id="fetches-title">Last fetches</h2>
        {{#chart}}
        <figure class="chart">
        <svg xmlns="http://www.w3.org/2000/svg" width="{{width}}" height="{{height}}" viewBox="0 0 {{width}} {{height}}" role="img" aria-labelledby="chart-title">
        <title id="chart-title">{{summary}}</title>
        <line class="axis" x1="0" y1="{{height}}" x2="{{width}}" y2="{{height}}"/>
        {{#bars}}<rect class="{{class}}" x="{{x}}" y="{{y}}" width="{{barWidth}}" height="{{barHeight}}"><title>{{label}}</title></rect>
        {{/bars}}
        </svg>
        <figcaption>{{summary}}. <span class="key newData">new data</span> <span class="key noData">no data</span> <span class="key failed">failed</span></figcaption>
        </figure>
        {{/chart}}
        {{^chart}}<p>No fetch recorded yet.</p>{{/chart}}
        </section>
        {{#hasItems}}
        <section aria-labelledby="items-title">
        <h2 id="items-title">Recent items</h2>
        <ul class="items">
        {{#items}}<li>{{#link}}<a href="{{link}}" rel="noopener noreferrer nofollow">{{title}}</a>{{/link}}{{^link}}{{title}}{{/link}}{{#published}} <time datetime="{{iso}}">{{text}}</time>{{/published}}</li>
        {{/items}}
        </ul>
        </section>
        {{/hasItems}}
        <section aria-labelledby="history-title">
        <h2 id="history-title">History</h2>
        <p class="views">Diffs: {{#sideBySide}}<a href="{{inlineHref}}">inline</a> · <strong>side by side</strong>{{/sideBySide}}{{^sideBySide}}<strong>inline</strong> · <a href="{{splitHref}}">side by side</a>{{/sideBySide}}</p>
        {{#records}}
        <article class="record {{kind}}" id="change-{{id}}">
        <h3><span class="kind">{{kindText}}</span> <time datetime="{{at.iso}}">{{at.text}}</time></h3>
        {{#title}}<p class="title">{{#link}}<a href="{{link}}" rel="noopener noreferrer nofollow">{{title}}</a>{{/link}}{{^link}}{{title}}{{/link}}</p>{{/title}}
        {{#summary}}<p class="summary">{{summary}}</p>{{/summary}}
        {{#error}}<p class="error">{{error}}</p>{{/error}}
        {{#movedTo}}<p>Moved to <code>{{movedTo}}</code></p>{{/movedTo}}
        {{#screenshot}}<p class="shot"><a href="{{screenshot}}"><img src="{{screenshot}}" alt="The page as the browser showed it at this change" loading="lazy"></a></p>{{/screenshot}}
        {{#notes}}<p class="note">{{.}}</p>{{/notes}}
        {{#hasInline}}
        <div class="scroll"><table class="diff inline"><caption class="hidden">Changes: additions and removals</caption>
        <tbody>{{#inline}}<tr class="{{class}}"><td class="sign" aria-label="{{label}}">{{sign}}</td><td><pre>{{text}}</pre></td></tr>
        {{/inline}}</tbody></table></div>
        {{/hasInline}}
        {{#hasSplit}}
        <div class="scroll"><table class="diff split"><caption class="hidden">Changes: before and after</caption>
        <thead><tr><th scope="col">Before</th><th scope="col">After</th></tr></thead>
        <tbody>{{#split}}<tr>{{#hunk}}<td class="hunk" colspan="2"><pre>{{hunk}}</pre></td>{{/hunk}}{{^hunk}}<td class="{{leftClass}}"><pre>{{left}}</pre></td><td class="{{rightClass}}"><pre>{{right}}</pre></td>{{/hunk}}</tr>
        {{/split}}</tbody></table></div>
        {{/hasSplit}}
        </article>
        {{/records}}
        {{^records}}<p>No change recorded{{#historyOff}} (history: off){{/historyOff}}.</p>{{/records}}
        </section>
        {{> footer}}
        """

    static let outputs = """
        {{> header}}
        <h1>Outputs</h1>
        <div class="scroll">
        <table class="outputs">
        <caption class="hidden">Outputs and their deliveries</caption>
        <thead><tr><th scope="col">Output</th><th scope="col">Type</th><th scope="col">Delivered</th><th scope="col">Pending</th><th scope="col">Failing</th><th scope="col">Given up</th><th scope="col">Held</th><th scope="col"><span class="hidden">Actions</span></th></tr></thead>
        <tbody>
        {{#outputs}}
        <tr class="{{#anyGivenUp}}failing{{/anyGivenUp}}">
        <th scope="row">{{name}}</th><td>{{type}}</td><td class="number">{{delivered}}</td><td class="number">{{pending}}</td>
        <td class="number">{{failing}}</td><td class="number">{{givenUp}}</td><td>{{held}}</td>
        <td>{{#retryAction}}<form method="post" action="{{retryAction}}" class="action"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit">Retry {{givenUp}}</button></form>{{/retryAction}}</td>
        </tr>
        {{/outputs}}
        {{^outputs}}<tr><td colspan="8">No output is configured.</td></tr>{{/outputs}}
        </tbody>
        </table>
        </div>
        <h2>Deliveries not yet made</h2>
        {{#hasDeliveries}}
        <div class="scroll">
        <table class="deliveries">
        <thead><tr><th scope="col">Output</th><th scope="col">Source</th><th scope="col">What</th><th scope="col">Attempts</th><th scope="col">State</th><th scope="col">Last error</th></tr></thead>
        <tbody>
        {{#deliveries}}<tr class="{{class}}"><td>{{output}}</td><td><a href="{{sourceHref}}">{{source}}</a></td><td>{{what}}</td><td class="number">{{attempts}}</td><td>{{state}}</td><td class="error">{{error}}</td></tr>
        {{/deliveries}}
        </tbody>
        </table>
        </div>
        {{#more}}<p>{{more}} more not shown.</p>{{/more}}
        {{/hasDeliveries}}
        {{^hasDeliveries}}<p>Every delivery has been made.</p>{{/hasDeliveries}}
        {{> footer}}
        """

    static let login = """
        {{> header}}
        <h1>Sign in</h1>
        {{#failed}}<p class="notice error" role="alert">That is not the token.</p>{{/failed}}
        <form method="post" action="/login" class="login">
        <label for="login-token">The token of <code>listen:</code></label>
        <input id="login-token" name="token" type="password" autocomplete="current-password" required autofocus>
        <button type="submit">Sign in</button>
        </form>
        {{> footer}}
        """

    static let notFound = """
        {{> header}}
        <h1>Not found</h1>
        <p>{{message}}</p>
        <p><a href="/">All sources</a></p>
        {{> footer}}
        """

    /// Every template, compiled once; partials resolve in it.
    static func library() throws -> MustacheLibrary {
        var library = MustacheLibrary()
        for (name, text) in all { try library.register(text, named: name) }
        return library
    }

    static let all: [(String, String)] = [
        ("header", header), ("footer", footer), ("sources", sources), ("source", source), ("outputs", outputs), ("login", login), ("notFound", notFound),
    ]
}
