//! The pieces every HTML page of the reports shares: escaping, the document's head (its style and
//! a Content-Security-Policy that lets only the page's own script run) and end (that script, for
//! sorting and filtering tables), the status legend and the formatting of numbers.
//!
//! Every text that comes from a results file is untrusted: [`escape`] makes it safe in text and in
//! quoted attributes, and the script builds no markup from text.

use std::fmt::Write as _;

use crate::score::Verdict;

/// `&`, `<`, `>`, `"` and `'` as entities: safe in text and in quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page's style: readable type at normal zoom (15 px text, 14 px in tables and charts).
const STYLE: &str = "\
body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}\
h1{margin-bottom:.2em}h2{margin-top:2em;border-bottom:1px solid #ccc}h4{margin:.8em 0 .3em}\
table{border-collapse:collapse;margin:.6em 0;font-size:14px}\
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}\
figure{margin:.5em 0;display:inline-block;vertical-align:top}\
figcaption{font-weight:600;margin-bottom:.3em}\
svg{max-width:100%;height:auto}.muted{color:#555}\
.st{text-align:center;font-weight:600;min-width:3em}\
.st-AC{background:#2e7d32;color:#fff}.st-PA{background:#fdd835;color:#222}\
.st-WA{background:#c62828;color:#fff}.st-TLE{background:#ef6c00;color:#fff}\
.st-MLE{background:#6a1b9a;color:#fff}.st-RE{background:#ad1457;color:#fff}\
.st-CE{background:#616161;color:#fff}.st-SKIPPED{background:#bdbdbd;color:#222}\
.legend i{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:-1px}\
td.st small{font-weight:400;margin-left:.3em}\
table.grid tr.r{cursor:pointer}table.grid tr.r:hover td{outline:1px solid #333}\
table.grid th{cursor:pointer;position:sticky;top:0;background:#f5f5f5}\
tr.d{display:none}tbody.open tr.d,tbody:target tr.d{display:table-row}\
tbody.s{scroll-margin-top:4em}tbody:target tr.r td{box-shadow:inset 0 2px #1565c0}\
tr.d>td{background:#fafafa;padding:.6em 1em}\
pre{background:#f4f4f4;border:1px solid #ddd;padding:.5em;max-height:28em;overflow:auto;\
font-size:13.5px;white-space:pre-wrap;word-break:break-all}\
.controls{margin:.6em 0}.controls input,.controls select{font:inherit;margin-right:.6em}\
.over{color:#c62828;font-weight:600}\
.msg{font-size:12.5px;color:#444;white-space:pre-wrap;word-break:break-all;max-width:32em}\
table.diff{font:12.5px/1.35 ui-monospace,monospace}table.diff td{border:0;padding:0 6px;\
white-space:pre-wrap;word-break:break-all}table.diff td.del{background:#fde0e0}\
table.diff td.ins{background:#dff5df}";

/// Sorting (click a column's header) and filtering (by text, by a status any subtask has) of
/// each problem's grid, and opening a submission by clicking its row. It reads the page's own
/// `data-` attributes and text and only moves, shows or hides rows: nothing from the results is
/// ever parsed as markup.
const SCRIPT: &str = r#"(function(){
function key(b,i){var c=b.rows[0].cells[i],v=c.getAttribute('data-v');return v===null?c.textContent.toLowerCase():parseFloat(v);}
document.querySelectorAll('section').forEach(function(sec){
var t=sec.querySelector('table.grid');if(!t)return;
var q=sec.querySelector('input.q'),s=sec.querySelector('select.f'),n=sec.querySelector('.shown');
function filter(){var x=q.value.toLowerCase(),w=s.value,k=0;
Array.prototype.forEach.call(t.tBodies,function(b){var ok=(!x||b.rows[0].textContent.toLowerCase().indexOf(x)>=0)&&(!w||(' '+b.getAttribute('data-s')+' ').indexOf(' '+w+' ')>=0);b.hidden=!ok;if(ok)k++;});n.textContent=k;}
q.addEventListener('input',filter);s.addEventListener('change',filter);
t.tHead.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
var up=th.getAttribute('data-dir')==='desc';th.setAttribute('data-dir',up?'asc':'desc');
var bs=Array.prototype.slice.call(t.tBodies);
bs.sort(function(a,b){var x=key(a,i),y=key(b,i);return (x<y?-1:x>y?1:0)*(up?1:-1);});
bs.forEach(function(b){t.appendChild(b);});});});
Array.prototype.forEach.call(t.tBodies,function(b){b.rows[0].addEventListener('click',function(e){
if(e.target.tagName!=='A')b.classList.toggle('open');});});
});})();"#;

/// The nonce that lets the page's own script run under its Content-Security-Policy: derived
/// from the script, so that the same results give the same page.
fn nonce() -> String {
    blake3::hash(SCRIPT.as_bytes()).to_hex()[..32].to_string()
}

/// The document's head and the start of its body: `title` is escaped here.
pub fn page_head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:; script-src 'nonce-{nonce}'\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <title>{title}</title><style>{STYLE}</style></head>\n<body>\n",
        nonce = nonce(),
        title = escape(title),
    )
}

/// The page's script and the end of the document.
pub fn page_end() -> String {
    format!(
        "<script nonce=\"{}\">{SCRIPT}</script>\n</body></html>\n",
        nonce()
    )
}

/// The statuses and their colours, as the grid and the charts show them.
pub fn status_legend() -> String {
    let mut out = String::from("<p class=\"legend\">Statuses:");
    for status in ALL_STATUSES {
        let _ = write!(out, "<i class=\"st-{0}\"></i>{0}", status.as_str());
    }
    out.push_str("</p>\n");
    out
}

/// Every status, best first, as the page lists them.
pub const ALL_STATUSES: [Verdict; 8] = [
    Verdict::Accepted,
    Verdict::Partial,
    Verdict::WrongAnswer,
    Verdict::TimeLimit,
    Verdict::MemoryLimit,
    Verdict::RuntimeError,
    Verdict::CompilationError,
    Verdict::Skipped,
];

/// Seconds with three decimals.
pub fn seconds(x: f64) -> String {
    format!("{x:.3} s")
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / (1u64 << 20) as f64)
}

pub fn percent(part: usize, whole: usize) -> String {
    match whole {
        0 => "-".into(),
        _ => format!("{:.1}%", 100.0 * part as f64 / whole as f64),
    }
}

/// A table; cells are already HTML, `numeric` marks right-aligned columns.
pub fn table(headers: &[&str], numeric: &[bool], rows: &[Vec<String>]) -> String {
    let class = |i: usize| match numeric.get(i) {
        Some(true) => " class=\"num\"",
        _ => "",
    };
    let mut out = String::from("<table><tr>");
    for (i, h) in headers.iter().enumerate() {
        let _ = write!(out, "<th{}>{}</th>", class(i), escape(h));
    }
    out.push_str("</tr>\n");
    for row in rows {
        out.push_str("<tr>");
        for (i, cell) in row.iter().enumerate() {
            let _ = write!(out, "<td{}>{cell}</td>", class(i));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

pub fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    match n {
        0 => 0.0,
        n => sum / n as f64,
    }
}

#[cfg(test)]
mod tests {
    /// Every status reads without colour (its letters beside its swatch), the grid's colours
    /// are the charts', and PA and TLE are told apart at a glance.
    #[test]
    fn statuses_are_named_in_the_legend_and_coloured_as_the_charts() {
        let legend = status_legend();
        for status in ALL_STATUSES {
            let name = status.as_str();
            assert!(
                legend.contains(&format!("<i class=\"st-{name}\"></i>{name}")),
                "{legend}"
            );
            let color = crate::evaluate::plots::status_color(status);
            let css = format!(
                ".st-{name}{{background:#{:02x}{:02x}{:02x};",
                color.0, color.1, color.2
            );
            assert!(STYLE.contains(&css), "{css} not in the page's style");
        }
        let rgb = |v: Verdict| {
            let c = crate::evaluate::plots::status_color(v);
            [c.0, c.1, c.2].map(f64::from)
        };
        let (pa, tle) = (rgb(Verdict::Partial), rgb(Verdict::TimeLimit));
        let distance = pa
            .iter()
            .zip(tle)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(distance > 100.0, "PA and TLE are {distance:.0} apart");
    }

    use super::*;

    #[test]
    fn escaping_leaves_no_markup() {
        assert_eq!(
            escape("<a href='x'>\"&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&quot;&amp;&quot;&lt;/a&gt;"
        );
    }

    #[test]
    fn the_script_builds_no_markup_from_text() {
        for risky in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval",
            "href",
        ] {
            assert!(!SCRIPT.contains(risky), "{risky}");
        }
        assert!(page_head("x").contains(&format!("'nonce-{}'", nonce())));
        assert!(page_end().contains(&format!("<script nonce=\"{}\">", nonce())));
    }
}
