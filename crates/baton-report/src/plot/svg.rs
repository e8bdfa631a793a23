//! A minimal SVG writer for the plots (the bottom layer, under [`super::chart`]).
//!
//! Every attribute value and every text node goes through [`escape`], so a pair or
//! model name can never open a tag or end an attribute. Tag and attribute names
//! come from this crate's code only. Numbers are written with at most two decimals
//! and never as `-0`, so the same report always gives the same bytes.

use std::fmt::Write;

/// Escapes text for an XML (SVG or HTML) text node or a quoted attribute value.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A coordinate or length: at most two decimals, trailing zeros dropped, no `-0`.
pub(crate) fn num(v: f64) -> String {
    if !v.is_finite() {
        return "0".to_owned();
    }
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    match s {
        "-0" | "" => "0".to_owned(),
        s => s.to_owned(),
    }
}

/// Something that can be an attribute value.
pub(crate) trait AttrValue {
    /// The value, escaped.
    fn render(&self) -> String;
}

impl AttrValue for &str {
    fn render(&self) -> String {
        escape(self)
    }
}

impl AttrValue for String {
    fn render(&self) -> String {
        escape(self)
    }
}

impl AttrValue for f64 {
    fn render(&self) -> String {
        num(*self)
    }
}

/// Attributes as (name, value) pairs.
pub(crate) type Attrs<'a> = &'a [(&'static str, &'a dyn AttrValue)];

/// An SVG document under construction.
#[derive(Debug)]
pub(crate) struct Svg {
    out: String,
    open: Vec<&'static str>,
}

impl Svg {
    /// Opens the root element: `width` × `height` pixels, generic `sans-serif`
    /// text, and a `<title>` for screen readers and tooltips.
    pub(crate) fn new(width: f64, height: f64, title: &str) -> Svg {
        let mut svg = Svg {
            out: String::new(),
            open: Vec::new(),
        };
        svg.open(
            "svg",
            &[
                ("xmlns", &"http://www.w3.org/2000/svg"),
                ("viewBox", &format!("0 0 {} {}", num(width), num(height))),
                ("width", &width),
                ("height", &height),
                ("font-family", &"sans-serif"),
                ("font-size", &12.0),
                ("role", &"img"),
            ],
        );
        svg.element("title", &[], title);
        svg.leaf(
            "rect",
            &[("width", &width), ("height", &height), ("fill", &"#ffffff")],
        );
        svg
    }

    fn start_tag(&mut self, tag: &'static str, attrs: Attrs<'_>) {
        debug_assert!(is_name(tag), "tag {tag:?}");
        self.out.push('<');
        self.out.push_str(tag);
        for (name, value) in attrs {
            debug_assert!(is_name(name), "attribute {name:?}");
            let _ = write!(self.out, " {name}=\"{}\"", value.render());
        }
    }

    /// `<tag ...>`, closed later by [`Svg::close`].
    pub(crate) fn open(&mut self, tag: &'static str, attrs: Attrs<'_>) {
        self.start_tag(tag, attrs);
        self.out.push_str(">\n");
        self.open.push(tag);
    }

    /// Closes the innermost open element.
    pub(crate) fn close(&mut self) {
        if let Some(tag) = self.open.pop() {
            let _ = writeln!(self.out, "</{tag}>");
        }
    }

    /// `<tag .../>`.
    pub(crate) fn leaf(&mut self, tag: &'static str, attrs: Attrs<'_>) {
        self.start_tag(tag, attrs);
        self.out.push_str("/>\n");
    }

    /// `<tag ...>text</tag>`, the text escaped.
    pub(crate) fn element(&mut self, tag: &'static str, attrs: Attrs<'_>, text: &str) {
        self.start_tag(tag, attrs);
        let _ = writeln!(self.out, ">{}</{tag}>", escape(text));
    }

    /// Closes every open element and returns the document.
    pub(crate) fn finish(mut self) -> String {
        while !self.open.is_empty() {
            self.close();
        }
        self.out
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':')
}

/// Tick values covering `[lo, hi]` at a round step (1, 2 or 5 × 10ⁿ) giving
/// about `target` intervals; the first and last tick enclose the range.
pub(crate) fn ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - 1.0, lo + 1.0)
    };
    let raw = (hi - lo) / target.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * magnitude);
    let first = (lo / step).floor() as i64;
    let last = (hi / step).ceil() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_both_quotes() {
        assert_eq!(escape(r#"<b>&"x'"#), "&lt;b&gt;&amp;&quot;x&#39;");
        assert_eq!(escape("plain → text"), "plain → text");
    }

    #[test]
    fn numbers_are_short_and_never_negative_zero() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.345), "12.35");
        assert_eq!(num(0.5), "0.5");
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(-3.1), "-3.1");
        assert_eq!(num(f64::NAN), "0");
    }

    #[test]
    fn ticks_are_round_and_enclose_the_range() {
        assert_eq!(ticks(0.0, 100.0, 5), [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(
            ticks(-85.0, 110.0, 6),
            [-100.0, -50.0, 0.0, 50.0, 100.0, 150.0]
        );
        assert_eq!(ticks(7.0, 7.0, 5), [6.0, 6.5, 7.0, 7.5, 8.0]);
    }

    #[test]
    fn elements_are_escaped_and_closed() {
        let mut svg = Svg::new(10.0, 5.0, "a < b");
        svg.open("g", &[("class", &"x\"y")]);
        svg.element("text", &[("x", &1.5)], "R&D");
        let out = svg.finish();
        assert!(out.contains("<title>a &lt; b</title>"), "{out}");
        assert!(out.contains("<g class=\"x&quot;y\">"), "{out}");
        assert!(out.contains("<text x=\"1.5\">R&amp;D</text>"), "{out}");
        assert!(out.ends_with("</g>\n</svg>\n"), "{out}");
    }
}
