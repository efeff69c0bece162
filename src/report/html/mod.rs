//! `report.html`: one page per run, self-contained — the charts inline as SVG, the style
//! inline, no script, font or image fetched (its content security policy forbids every
//! fetch) — that a reviewer reads top down: the verdict, the decision chart, the results,
//! each sweep's points and charts, the departures from production, the gates, the fleet, the other charts, the environment,
//! and links to the run's raw files. Written at the end of a scenario and by `report`, from
//! the run directory's own files, as the charts are.
//!
//! Its one inline script checks the page in a browser: it records any error and any fetch,
//! then sets `data-state` on `#page-check` to `ok` or `errors` (the browser test reads it).

mod doc;
mod markup;
mod sections;

use markup::Page;

use crate::report::chart::{self, Inline, RunData};
use crate::report::doc::{Doc, Section};
use crate::report::export::content;
use crate::report::outdir::RUN_FILES;
use crate::report::output::{Input, Staged, WriteError};
use crate::results::summary::Summary;

/// Writes it: what [`crate::report::publish::RunOutput::Html`] renders.
pub(crate) fn write(input: &Input<'_>, out: &mut Staged) -> Result<(), WriteError> {
    let charts = RunData::load(input.dir).and_then(|run| chart::inline(&run)).map_err(WriteError::render)?;
    // The files the run's recorders wrote beside its reports, linked when present.
    let present: Vec<&str> = RUN_FILES.iter().copied().filter(|f| input.dir.join(f).is_file()).collect();
    out.put("report.html", render(input.summary(), &charts, &present).as_bytes())
}

/// Every fetch refused: the page holds everything it shows.
const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; \
base-uri 'none'; form-action 'none'";

const STYLE: &str = r#"
:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; margin: 0;
  background: #fafafa; color: #1b1b1b; }
main { max-width: 1240px; margin: 0 auto; padding: 16px 24px 48px; }
h1 { font-size: 26px; margin: 8px 0; }
h2 { font-size: 20px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
h3 { font-size: 16px; margin: 16px 0 6px; }
nav a { margin-right: 12px; }
.lead { font-size: 16px; }
.muted { color: #666; }
.pass { color: #176f2c; }
.fail { color: #b3261e; }
td.pass { background: #e7f5ea; }
td.fail { background: #fdecea; font-weight: 600; }
.banner { padding: 10px 14px; border-radius: 6px; border: 1px solid; color: #1b1b1b; margin: 8px 0; }
.banner p, .banner ul { margin: 2px 0; }
.banner.pass { background: #e7f5ea; border-color: #9fd3aa; }
.banner.fail { background: #fdecea; border-color: #f1aaa4; }
.wide { overflow-x: auto; }
table { border-collapse: collapse; margin: 8px 0; background: #fff; font-size: 14px; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px; }
figure { margin: 16px 0; background: #fff; border: 1px solid #ddd; padding: 8px; }
figure svg { display: block; width: 100%; height: auto; }
figcaption { color: #555; font-size: 13px; margin-top: 4px; }
details { margin: 8px 0; }
li { overflow-wrap: anywhere; }
#results td:nth-child(1) { min-width: 8em; }
"#;

/// Records every error (a script's, or a resource that failed) and every fetch, and says
/// so on `#page-check` once the page has loaded.
const CHECK: &str = r#"
(function () {
  var problems = [];
  window.addEventListener('error', function (e) {
    var t = e.target;
    problems.push(t && t !== window && (t.src || t.href) ? 'failed to load ' + (t.src || t.href) : 'error: ' + e.message);
  }, true);
  document.addEventListener('securitypolicyviolation', function (e) {
    problems.push('refused by the page policy: ' + e.blockedURI + ' (' + e.violatedDirective + ')');
  });
  window.addEventListener('load', function () {
    var fetched = performance.getEntriesByType ? performance.getEntriesByType('resource') : [];
    for (var i = 0; i < fetched.length; i++) { problems.push('fetched ' + fetched[i].name); }
    var m = document.getElementById('page-check');
    m.setAttribute('data-state', problems.length ? 'errors' : 'ok');
    m.textContent = problems.join('\n');
  });
})();
"#;

/// The page for `s`, with its charts drawn as `charts` and the optional files `present`
/// beside it: the report summary.md writes ([`content::document`]), with the decision chart
/// after its verdict and the environment and the run's files at its end.
pub(crate) fn render(s: &Summary, charts: &[Inline], present: &[&str]) -> String {
    let decision = charts.iter().find(|c| c.stem == "decision");
    let own = Own {
        early: decision.map(|_| ("decision", "decision chart")).into_iter().collect(),
        late: vec![("environment", "environment"), ("files", "files")],
        write: |p: &mut Page, late| {
            if late {
                sections::environment(p, s);
                sections::files(p, present);
            } else if let Some(c) = decision {
                p.section("decision", "Pickup against idle discovery");
                p.el(
                    "p",
                    "",
                    "Each case's pickup p50 against its idle discovery requests per minute per relay dir; the shaded \
                     region is what the cases' gates on those two figures allow. A ring misses one of them.",
                );
                p.chart(c).raw("</section>\n");
            }
        },
    };
    page(&content::document(s), charts, own)
}

/// A document alone on its page (a conform run's).
pub(crate) fn document_page(d: &Doc) -> String {
    page(d, &[], Own { early: Vec::new(), late: Vec::new(), write: |_: &mut Page, _| {} })
}

/// A page's own sections beside its document, as anchors and nav names: `early` after the
/// verdict, `late` after the document's sections; `write` writes them (`true`: the late ones).
struct Own<W: Fn(&mut Page, bool)> {
    early: Vec<(&'static str, &'static str)>,
    late: Vec<(&'static str, &'static str)>,
    write: W,
}

/// A document as a page: its head, its title and lead, a nav, the verdict on a banner, the
/// page's early sections, the document's sections, any chart drawn that no section shows,
/// the page's late sections.
fn page<'a>(d: &'a Doc, charts: &[Inline], own: Own<impl Fn(&mut Page, bool)>) -> String {
    let (word, passed) = d.outcome;
    let mut p = Page::default();
    p.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    p.raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    p.raw("<meta http-equiv=\"Content-Security-Policy\" content=\"").raw(POLICY).raw("\">\n");
    p.raw("<link rel=\"icon\" href=\"data:,\">\n");
    p.raw("<title>").text(&d.title).raw(" — ").text(word).raw("</title>\n");
    p.raw("<style>").raw(STYLE).raw("</style>\n<script>").raw(CHECK).raw("</script>\n</head>\n<body>\n");
    p.raw("<p id=\"page-check\" data-state=\"loading\" hidden></p>\n<main>\n");
    p.raw("<header>\n<h1>").text(&d.title).raw(" — ").el("span", if passed { "pass" } else { "fail" }, word);
    p.raw("</h1>\n");
    doc::blocks(&mut p, &d.lead, charts);
    p.raw("</header>\n");
    let anchor = |sec: &'a Section| (sec.id.as_str(), sec.nav.as_str());
    let (verdict, sections) = (d.verdict.iter().map(|v| anchor(&v.section)), d.sections.iter().map(anchor));
    p.raw("<nav>");
    for (id, what) in verdict.chain(own.early.iter().copied()).chain(sections).chain(own.late.iter().copied()) {
        p.raw("<a href=\"#").text(id).raw("\">").text(what).raw("</a>");
    }
    p.raw("</nav>\n");
    if let Some(v) = &d.verdict {
        p.raw("<section id=\"").text(&v.section.id);
        p.raw(if v.held { "\" class=\"banner pass\">\n" } else { "\" class=\"banner fail\">\n" });
        p.raw("<h2>").inline(&v.section.title).raw("</h2>\n");
        doc::blocks(&mut p, &v.section.blocks, charts);
        p.raw("</section>\n");
    }
    (own.write)(&mut p, false);
    for sec in &d.sections {
        doc::write(&mut p, sec, charts);
    }
    // A chart drawn that no section shows still has its place.
    let shown: Vec<&str> =
        d.verdict.iter().map(|v| &v.section).chain(&d.sections).flat_map(|sec| doc::charts(&sec.blocks)).collect();
    let more: Vec<&Inline> =
        charts.iter().filter(|c| c.stem != "decision" && !shown.contains(&c.stem.as_str())).collect();
    if !more.is_empty() {
        p.section("more-charts", "More charts");
        for c in more {
            p.chart(c);
        }
        p.raw("</section>\n");
    }
    (own.write)(&mut p, true);
    p.raw("</main>\n</body>\n</html>\n");
    p.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::recorder::Measure;
    use crate::report::export::fixture::realistic;

    #[test]
    fn every_string_from_the_summary_is_escaped() {
        let mut s = realistic();
        s.description = "<script>alert('description')</script> & more".into();
        s.results[0].notices.push("<img src=x onerror=alert(1)>".into());
        s.results[0].notices_total += 1;
        s.results[0].host_params = "\"><b>host</b>".into();
        let html = render(&s, &[], &["events.ndjson"]);
        assert!(!html.contains("<script>alert"), "the description is text");
        assert!(html.contains("&lt;script&gt;alert(&#39;description&#39;)&lt;/script&gt; &amp; more"));
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;"), "a notice is text");
        assert!(!html.contains("<img") && !html.contains("<b>host"));
        assert_eq!(html.matches("<script>").count(), 1, "the page's own check only");
        assert!(html.contains("<a href=\"events.ndjson\">"));
        assert!(!html.contains("calls.csv"), "a file not present is not linked");
    }

    #[test]
    fn a_percentile_over_too_few_samples_is_marked_with_the_rule_beneath() {
        use crate::report::export::{THIN, THIN_NOTE};
        let mut s = crate::report::export::tests::well_sampled();
        let html = render(&s, &[], &[]);
        assert!(!html.contains(THIN), "20,000 samples: nothing marked");
        s.results[0].measures.get_mut(Measure::Pickup).count = 162;
        let p = s.results[0].latency(Measure::Pickup);
        let us = crate::base::units::human_us;
        let html = render(&s, &[], &[]);
        assert!(html.contains(&format!("{} / {}{THIN}", us(p.p50), us(p.p99))), "the pickup pair's p99");
        assert_eq!(html.matches(THIN_NOTE).count(), 2, "the rule under the results and the distributions");
    }

    #[test]
    fn the_page_fetches_nothing_and_says_the_verdict_first() {
        let html = render(&realistic(), &[], &[]);
        for fetch in ["src=", "http://", "https://", "@import", "url("] {
            assert!(!html.contains(fetch), "{fetch} in the page");
        }
        let verdict = html.find("<section id=\"verdict\" class=\"banner fail\">").expect("a verdict");
        assert!(verdict < html.find("<section id=\"results\">").unwrap());
        assert!(html.contains("<h2>Rollout verdict: production as built misses 1 of 2 rollout gates</h2>"));
        assert!(
            html.contains("<td class=\"fail\"><span class=\"fail\">✗</span> <strong>window-exec 5.33</strong></td>"),
            "production's missed gate, its figure, coloured: {html}"
        );
        assert!(html.ends_with("</html>\n"));
    }

    #[test]
    fn a_sweep_has_its_section_a_row_per_point_the_best_marked_and_its_charts() {
        use crate::results::summary::CaseResult;
        use crate::results::sweep::SweepResult;
        let text = crate::scenario::sweep::swept_scenario(
            "sweep = { \"runner.window\" = [\"10s\", \"25s\"] }\nobjective = \"min discovery_per_min\"\n",
        );
        let sc = crate::scenario::Scenario::parse("s.toml", &text).unwrap();
        let mut s = realistic();
        let mut w = SweepResult::of(&sc.sweeps[0]);
        for (case, rate) in [("w@window=10s", 4.0), ("w@window=25s", 2.0)] {
            let mut r = CaseResult { case: case.into(), departures: Some(vec![]), pass: true, ..Default::default() };
            r.requests.discovery_per_min = rate;
            s.results.push(r);
        }
        w.settle(|case, figures| {
            let r = s.results.iter().find(|r| r.case == case)?;
            Some((r.standing().meets_every_gate(), figures.iter().map(|m| r.metric(*m)).collect()))
        });
        s.sweeps = vec![w];
        let chart = |stem: &str| Inline { stem: stem.into(), title: stem.into(), svg: "<svg></svg>".into() };
        let charts = [chart("latency-percentiles"), chart("sweep-w-discovery_per_min")];
        let html = render(&s, &charts, &[]);
        let section = html.split("<section id=\"sweep-0\">").nth(1).expect("a sweep's section");
        let section = section.split("</section>").next().unwrap();
        assert!(section.contains("<h2>Sweep: w over <code>runner.window</code></h2>"), "{section}");
        assert!(section.contains("<strong>best: w@window=25s: min discovery_per_min = 2"), "{section}");
        assert_eq!(section.matches("<tr><td>10s</td>").count() + section.matches("<tr><td>25s</td>").count(), 2);
        assert!(
            section.contains("<td class=\"pass\"><span class=\"pass\">✓</span> 0/0 <strong>best</strong></td>"),
            "{section}"
        );
        assert!(section.contains("id=\"chart-sweep-w-discovery_per_min\""), "its chart in its section");
        assert!(!section.contains("chart-latency-percentiles"), "the other charts stay in theirs");
        assert!(html.contains("<a href=\"#sweep-0\">sweep w</a>"));
        assert!(!render(&realistic(), &[], &[]).contains("id=\"sweep-0\""), "no sweep, no section");
    }
}
