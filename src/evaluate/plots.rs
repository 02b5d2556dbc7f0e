//! The HTML report's charts, drawn with `plotters` into SVG text that the page inlines: the
//! report is one file that works offline, and the browser draws the text with its own fonts
//! (no font files or bitmaps in the binary). Every label reaches the SVG escaped by
//! `plotters-svg`, so a hostile subtask or test name stays text.
//!
//! Each function takes the numbers already computed (see `html_report`) and only draws.

use anyhow::{anyhow, Result};
use plotters::prelude::*;

use crate::score::Verdict;

const FONT: &str = "sans-serif";
const BAR: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const SOLVED: RGBColor = RGBColor(0x2e, 0x7d, 0x32);
const PARTIAL: RGBColor = RGBColor(0xfd, 0xd8, 0x35);
const LIMIT: RGBColor = RGBColor(0xc6, 0x28, 0x28);

/// Submissions per bin of total scores.
pub struct Histogram<'a> {
    /// `(low, high, submissions)`, bins in order, covering `0..=max_points`.
    pub bins: &'a [(f64, f64, usize)],
    pub max_points: f64,
    /// The most submissions the vertical axis must hold: histograms drawn side by side share
    /// it (0: this histogram's own highest bar).
    pub most: usize,
}

/// One subtask's share of submissions that solve it fully and partly (0–1 each).
pub struct SolveRate<'a> {
    pub name: &'a str,
    pub solved: f64,
    pub partial: f64,
}

/// The colour of a status, in the charts and the page's grid alike (`#rrggbb`).
pub fn status_color(status: Verdict) -> RGBColor {
    match status {
        Verdict::Accepted => SOLVED,
        Verdict::Partial => PARTIAL,
        Verdict::WrongAnswer => LIMIT,
        Verdict::TimeLimit => RGBColor(0xef, 0x6c, 0x00),
        Verdict::MemoryLimit => RGBColor(0x6a, 0x1b, 0x9a),
        Verdict::RuntimeError => RGBColor(0xad, 0x14, 0x57),
        Verdict::CompilationError => RGBColor(0x61, 0x61, 0x61),
        Verdict::Skipped => RGBColor(0xbd, 0xbd, 0xbd),
    }
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
        let top = histogram
            .bins
            .iter()
            .map(|b| b.2)
            .max()
            .unwrap_or(0)
            .max(histogram.most)
            .max(1);
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
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 14))
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
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 14))
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
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// One status's test runs, counted per bin of their use as a share of the limit.
pub struct StatusCurve<'a> {
    pub status: &'a str,
    pub color: RGBColor,
    /// Runs per bin; bin `i` starts at `bin_low(i)` of the limit.
    pub counts: &'a [usize],
}

/// Per status, a line through the number of runs in each bin of use as a share of the limit, on
/// a log scale from 0.01 % to 10 times the limit, the limit as a red vertical line. `what`
/// names the horizontal axis.
pub fn share_of_limit(
    curves: &[StatusCurve],
    bin_low: impl Fn(usize) -> f64,
    what: &str,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (470, 300)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let bins = curves.iter().map(|c| c.counts.len()).max().unwrap_or(1);
        let (low, high) = (bin_low(0), bin_low(bins));
        let top = curves
            .iter()
            .flat_map(|c| c.counts.iter().copied())
            .max()
            .unwrap_or(0)
            .max(1);
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .margin_right(30)
            .x_label_area_size(44)
            .y_label_area_size(50)
            .build_cartesian_2d((low..high).log_scale(), 0usize..top + top / 5 + 1)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(6)
            .x_label_formatter(&|x| percent_of_limit(*x))
            .x_desc(what)
            .y_desc("test runs")
            .label_style((FONT, 14))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(plot_error)?;
        chart
            .draw_series(LineSeries::new(
                [(1.0, 0), (1.0, top + top / 5 + 1)],
                LIMIT.stroke_width(2),
            ))
            .map_err(plot_error)?;
        for curve in curves {
            // Each count sits at the middle of its bin on the log axis.
            let points: Vec<(f64, usize)> = curve
                .counts
                .iter()
                .enumerate()
                .map(|(i, &n)| ((bin_low(i) * bin_low(i + 1)).sqrt(), n))
                .collect();
            let color = curve.color;
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(plot_error)?
                .label(curve.status)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(3))
                });
            chart
                .draw_series(
                    points
                        .into_iter()
                        .filter(|p| p.1 > 0)
                        .map(|p| Circle::new(p, 3, color.filled())),
                )
                .map_err(plot_error)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FONT, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
    }
    Ok(svg)
}

/// A share of the limit as a percentage, with no more digits than it needs (`0.01%`, `100%`).
fn percent_of_limit(x: f64) -> String {
    let percent = x * 100.0;
    let digits = (-percent.log10().floor()).clamp(0.0, 4.0) as usize;
    format!("{percent:.digits$}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Histograms side by side share their vertical axis: a set with few submissions is drawn
    /// on the scale of the one with most.
    #[test]
    fn a_shared_vertical_axis_holds_the_most_submissions() {
        let few = [(0.0, 50.0, 2), (50.0, 100.0, 1)];
        let draw = |most| {
            score_histogram(&Histogram {
                bins: &few,
                max_points: 100.0,
                most,
            })
            .unwrap()
        };
        // The labels of the vertical axis: the texts anchored at their end.
        let highest = |svg: &str| -> u32 {
            svg.split("text-anchor=\"end\"")
                .skip(1)
                .filter_map(|t| t.split_once('>')?.1.split('<').next()?.trim().parse().ok())
                .max()
                .unwrap()
        };
        assert!(highest(&draw(0)) < 10);
        assert!(highest(&draw(40)) >= 40);
    }

    #[test]
    fn charts_are_svg_with_escaped_labels() {
        let bins = [(0.0, 50.0, 2), (50.0, 100.0, 1)];
        let svg = score_histogram(&Histogram {
            bins: &bins,
            max_points: 100.0,
            most: 0,
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
        let svg = share_of_limit(
            &[StatusCurve {
                status: hostile,
                color: LIMIT,
                counts: &[0, 2, 1],
            }],
            |i| 10f64.powi(i as i32 - 2),
            "CPU time",
        )
        .unwrap();
        assert!(!svg.contains("<script>"), "{svg}");
        assert!(svg.contains("#C62828") || svg.contains("#c62828"), "{svg}");
        assert_eq!(percent_of_limit(1.0), "100%");
        assert_eq!(percent_of_limit(0.0001), "0.01%");
        assert_eq!(percent_of_limit(10.0), "1000%");
    }
}
