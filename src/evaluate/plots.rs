//! The HTML report's charts, drawn with `plotters` into SVG text that the page inlines: the
//! report is one file that works offline, and the browser draws the text with its own fonts
//! (no font files or bitmaps in the binary). Every label reaches the SVG escaped by
//! `plotters-svg`, so a hostile subtask or test name stays text.
//!
//! Each function takes the numbers already computed (see `html_report`) and only draws.

use anyhow::{anyhow, Result};
use plotters::prelude::*;

const FONT: &str = "sans-serif";
const BAR: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const SOLVED: RGBColor = RGBColor(0x2e, 0x7d, 0x32);
const PARTIAL: RGBColor = RGBColor(0xf9, 0xa8, 0x25);
const LIMIT: RGBColor = RGBColor(0xc6, 0x28, 0x28);
const RANGE: RGBColor = RGBColor(0x9e, 0x9e, 0x9e);

/// Submissions per bin of total scores.
pub struct Histogram<'a> {
    /// `(low, high, submissions)`, bins in order, covering `0..=max_points`.
    pub bins: &'a [(f64, f64, usize)],
    pub max_points: f64,
}

/// One subtask's share of submissions that solve it fully and partly (0–1 each).
pub struct SolveRate<'a> {
    pub name: &'a str,
    pub solved: f64,
    pub partial: f64,
}

/// One test's smallest and largest use over the submissions that ran it, and whether any of
/// them exceeded the limit (the point is then drawn in the limit's colour).
pub struct Usage<'a> {
    pub name: &'a str,
    pub min: f64,
    pub max: f64,
    pub over_limit: bool,
}

fn plot_error(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("cannot draw a chart: {e}")
}

/// The name of item `i` at a whole tick of a horizontal axis whose items sit at 0, 1, 2...
/// (nothing between them).
fn item_label(names: &[&str], x: f64) -> String {
    let i = x.round();
    match (x - i).abs() < 1e-6 && i >= 0.0 {
        true => names
            .get(i as usize)
            .map_or(String::new(), |n| n.to_string()),
        false => String::new(),
    }
}

/// Bars of submissions per score bin.
pub fn score_histogram(histogram: &Histogram) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (460, 280)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let top = histogram.bins.iter().map(|b| b.2).max().unwrap_or(0).max(1);
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(44)
            .build_cartesian_2d(
                0f64..histogram.max_points.max(1.0),
                0usize..top + top / 8 + 1,
            )
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("total score")
            .y_desc("submissions")
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .draw()
            .map_err(plot_error)?;
        chart
            .draw_series(histogram.bins.iter().map(|&(low, high, count)| {
                let mut bar = Rectangle::new([(low, 0), (high, count)], BAR.filled());
                bar.set_margin(0, 0, 2, 2);
                bar
            }))
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// Stacked bars per subtask: the share of submissions solving it, then the share scoring part.
pub fn solve_rates(rates: &[SolveRate]) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (460, 280)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let n = rates.len().max(1) as f64;
        let names: Vec<&str> = rates.iter().map(|r| r.name).collect();
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(44)
            .build_cartesian_2d(-0.5f64..n - 0.5, 0f64..100.0)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(rates.len().clamp(1, 12))
            .x_label_formatter(&|x| item_label(&names, *x))
            .y_desc("% of submissions")
            .label_style((FONT, 12))
            .axis_desc_style((FONT, 13))
            .draw()
            .map_err(plot_error)?;
        let bar = |i: usize, low: f64, high: f64, color: RGBColor| {
            let x = i as f64;
            Rectangle::new(
                [(x - 0.4, low * 100.0), (x + 0.4, high * 100.0)],
                color.filled(),
            )
        };
        chart
            .draw_series(
                rates
                    .iter()
                    .enumerate()
                    .map(|(i, r)| bar(i, 0.0, r.solved, SOLVED)),
            )
            .map_err(plot_error)?
            .label("solved")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], SOLVED.filled()));
        chart
            .draw_series(
                rates
                    .iter()
                    .enumerate()
                    .map(|(i, r)| bar(i, r.solved, r.solved + r.partial, PARTIAL)),
            )
            .map_err(plot_error)?
            .label("partly")
            .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], PARTIAL.filled()));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FONT, 12))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// Per test, a grey line from the smallest to the largest use and a dot at the largest (red when
/// a run exceeded the limit), with the limit as a red line across (when known). `unit` names the
/// vertical axis. The page's caption explains this: no legend hides a point.
pub fn usage_against_limit(tests: &[Usage], limit: Option<f64>, unit: &str) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (940, 300)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let n = tests.len().max(1) as f64;
        let names: Vec<&str> = tests.iter().map(|t| t.name).collect();
        let highest = tests
            .iter()
            .map(|t| t.max)
            .chain(limit)
            .fold(0.0f64, f64::max);
        let top = if highest > 0.0 { highest * 1.12 } else { 1.0 };
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(-0.5f64..n - 0.5, 0f64..top)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(tests.len().clamp(1, 16))
            .x_label_formatter(&|x| item_label(&names, *x))
            .x_desc("test")
            .y_desc(unit)
            .label_style((FONT, 11))
            .axis_desc_style((FONT, 13))
            .draw()
            .map_err(plot_error)?;
        let at = |i: usize| i as f64;
        chart
            .draw_series(tests.iter().enumerate().map(|(i, t)| {
                PathElement::new(vec![(at(i), t.min), (at(i), t.max)], RANGE.stroke_width(2))
            }))
            .map_err(plot_error)?;
        chart
            .draw_series(tests.iter().enumerate().map(|(i, t)| {
                let color = if t.over_limit { LIMIT } else { BAR };
                Circle::new((at(i), t.max), 3, color.filled())
            }))
            .map_err(plot_error)?;
        if let Some(limit) = limit {
            let ends = [(-0.5, limit), (n - 0.5, limit)];
            chart
                .draw_series(LineSeries::new(ends, LIMIT.stroke_width(2)))
                .map_err(plot_error)?;
        }
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg_with_escaped_labels() {
        let bins = [(0.0, 50.0, 2), (50.0, 100.0, 1)];
        let svg = score_histogram(&Histogram {
            bins: &bins,
            max_points: 100.0,
        })
        .unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        let hostile = "<script>alert(1)</script>";
        let svg = solve_rates(&[SolveRate {
            name: hostile,
            solved: 0.5,
            partial: 0.25,
        }])
        .unwrap();
        assert!(
            !svg.contains("<script>") && svg.contains("&lt;script&gt;"),
            "{svg}"
        );
        let svg = usage_against_limit(
            &[Usage {
                name: hostile,
                min: 0.1,
                max: 1.2,
                over_limit: true,
            }],
            Some(1.0),
            "CPU seconds",
        )
        .unwrap();
        assert!(!svg.contains("<script>"), "{svg}");
        assert!(svg.contains("#C62828") || svg.contains("#c62828"), "{svg}");
    }
}
