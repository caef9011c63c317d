//! JUnit XML, the form CI dashboards read: one `<testsuite>` of `<testcase>`s, each with one
//! `<failure>` per thing found wrong (`check`: one test case per trace, one failure per finding;
//! `fuzz`: one per case; `explore`: one per bound set) or an `<error>` when it could not run.

/// One test case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    pub name: String,
    pub classname: String,
    pub failures: Vec<Failure>,
    /// It could not be judged (an unreadable trace), with why.
    pub error: Option<String>,
    /// It was left unjudged (a rule the log cannot let the checker judge), with why.
    pub skipped: Option<String>,
}

/// One failure of a test case: a short message (`line 18: no_false_cancel_claim`), its type
/// (the invariant or finding kind) and the whole sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub message: String,
    pub kind: String,
    pub text: String,
}

/// The suite as a JUnit XML document.
pub fn render(suite: &str, cases: &[Case]) -> String {
    let failures: usize = cases.iter().filter(|c| !c.failures.is_empty()).count();
    let errors = cases.iter().filter(|c| c.error.is_some()).count();
    // Said only where a case was skipped: reports of traces judged in full read as before.
    let skipped = match cases.iter().filter(|c| c.skipped.is_some()).count() {
        0 => String::new(),
        n => format!(" skipped=\"{n}\""),
    };
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\"{skipped}>\n",
        escape(suite),
        cases.len()
    ));
    out.push_str(&format!(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\"{skipped}>\n",
        escape(suite),
        cases.len()
    ));
    for case in cases {
        out.push_str(&format!(
            "    <testcase name=\"{}\" classname=\"{}\">\n",
            escape(&case.name),
            escape(&case.classname)
        ));
        for f in &case.failures {
            out.push_str(&format!(
                "      <failure message=\"{}\" type=\"{}\">{}</failure>\n",
                escape(&f.message),
                escape(&f.kind),
                escape(&f.text)
            ));
        }
        if let Some(why) = &case.skipped {
            out.push_str(&format!("      <skipped message=\"{}\"/>\n", escape(why)));
        }
        if let Some(e) = &case.error {
            out.push_str(&format!(
                "      <error message=\"{}\" type=\"input_error\">{}</error>\n",
                escape(e),
                escape(e)
            ));
        }
        out.push_str("    </testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// Text as XML character data or an attribute value; characters XML 1.0 cannot hold are dropped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_drops_what_xml_cannot_hold() {
        assert_eq!(escape("a<b>&\"c'\u{1}"), "a&lt;b&gt;&amp;&quot;c&apos;");
    }
}
