//! A canonical input, output or session-end line read in one pass: `at` and `session` are taken
//! out of the object as they stream past, up to the key that says the line's kind, and from
//! there the machine's own type reads the rest straight from the line ([`Rest`]).
//!
//! The typed structs of `canonical` read a line through `#[serde(flatten)]`, which buffers the
//! whole object before the machine's type sees it — twice for an input, whose `Timed` flattens
//! its kind in turn. Here the machine's type reads what [`Conform::input_kind_from_line`] and
//! [`Conform::output_from_line`] give: by default its own internally tagged enum, which buffers
//! the entries after the tag itself; for the turn machine a mirror of it, externally tagged
//! (`canonical/tagged.rs`), which buffers nothing — the tag's value names the variant
//! ([`EnumAccess`]) and its fields are read straight from the line.
//!
//! The typed structs stay the reference: this pass returns an event only where they would
//! return the same one, and `None` for every other line — any error (they word it), a meta line,
//! and what it cannot vouch for: a key written with escapes (it is read borrowed), a field before
//! the tag, keys beside a bare input's, an empty `session`. The test below holds the two to the
//! same events over the fixtures and over lines broken every way that matters.

use std::marker::PhantomData;

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, EnumAccess, IgnoredAny, MapAccess, VariantAccess, Visitor};
use serde::Deserializer;
use turnfence_model::Millis;

use super::kind::{shown_kind, DEFAULT_SESSION};
use crate::trace::conform::{Conform, LineInput, Observed};
use crate::trace::Event;

/// The line as an event, or `None` when the typed structs must read it.
pub(super) fn read<S: Conform>(text: &str) -> Option<Event<S>>
where
    S::Input: LineInput,
{
    let mut de = serde_json::Deserializer::from_str(text);
    let line = de.deserialize_map(Line::<S>(PhantomData)).ok()?;
    de.end().ok()?;
    // This pass takes the line's kind from its own keys; the typed structs take it from a
    // kind's `"name":` anywhere in the line when exactly one shows, and a nested object may hold
    // one. With no nested object (no `{` but the line's own) what shows is this pass's key, or
    // nothing and they read the keys too.
    let nested = memchr::memchr(b'{', text.as_bytes().get(1..)?).is_some();
    if nested && shown_kind(text).is_some_and(|shown| shown != line.item.kind()) {
        return None;
    }
    let session = match line.session {
        None => DEFAULT_SESSION.to_owned(),
        Some("") => return None,
        Some(s) => s.to_owned(),
    };
    match line.item {
        Item::Input(kind) => {
            let input = S::Input::at(line.at?, kind);
            if line.fields > 0 && S::is_bare(&input) {
                return None;
            }
            Some(Event::Input { session, input })
        }
        Item::Output(output) => Some(Event::Output {
            session,
            at: line.at?,
            observed: Observed::exact(output),
        }),
        Item::End(end) => end.then_some(Event::End { session }),
    }
}

/// What a line says happened: an input's kind, an output, or (`true`) its session's end.
enum Item<K, O> {
    Input(K),
    Output(O),
    End(bool),
}

impl<K, O> Item<K, O> {
    /// The line's kind as `shown_kind` gives it.
    fn kind(&self) -> (bool, bool, bool, bool) {
        match self {
            Item::Input(_) => (true, false, false, false),
            Item::Output(_) => (false, true, false, false),
            Item::End(_) => (false, false, false, true),
        }
    }
}

/// What the pass gives: what the line says happened, and the keys taken out beside it.
struct Read<'de, K, O> {
    item: Item<K, O>,
    session: Option<&'de str>,
    at: Option<Millis>,
    /// Keys handed to the machine's type besides the tag.
    fields: usize,
}

/// Reads a line's object in one pass for machine `S`.
struct Line<S>(PhantomData<S>);

impl<'de, S: Conform> Visitor<'de> for Line<S>
where
    S::Input: LineInput,
{
    type Value = Read<'de, <S::Input as LineInput>::Kind, S::Output>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let mut rest = Rest {
            map,
            tag: None,
            session: None,
            at: None,
            fields: 0,
        };
        let item = match rest.until_tag()? {
            "input" => Item::Input(S::input_kind_from_line(&mut rest)?),
            "output" => Item::Output(S::output_from_line(&mut rest)?),
            _ => {
                let end = rest.map.next_value()?;
                // A session end has no fields but `at` and `session`.
                while let Some(key) = rest.map.next_key::<&'de str>()? {
                    if !rest.took(key)? {
                        return Err(left(key));
                    }
                }
                Item::End(end)
            }
        };
        // The machine's type has read every entry (or the object's end says it has not).
        Ok(Read {
            item,
            session: rest.session.flatten(),
            at: rest.at,
            fields: rest.fields,
        })
    }
}

/// A line's object as the machine's type sees it: its tag, then the rest of its entries but
/// `at` and `session`, read straight from the line. A key the pass cannot vouch for is an error,
/// which leaves the line to the typed structs: one written with escapes (it is read borrowed),
/// one taken out twice, a second key saying the line's kind.
struct Rest<'de, A> {
    map: A,
    /// The tag, until it is handed to the machine's type as its first key.
    tag: Option<&'static str>,
    session: Option<Option<&'de str>>,
    at: Option<Millis>,
    fields: usize,
}

impl<'de, A: MapAccess<'de>> Rest<'de, A> {
    /// Takes `at` and `session` up to the line's tag, which must come next: `input`, `output`
    /// or `session_end` (its value is the next to read).
    fn until_tag(&mut self) -> Result<&'static str, A::Error> {
        while let Some(key) = self.map.next_key::<&'de str>()? {
            if self.took(key)? {
                continue;
            }
            let tag = match key {
                "input" => "input",
                "output" => "output",
                "session_end" => "session_end",
                _ => return Err(left(key)),
            };
            self.tag = Some(tag);
            return Ok(tag);
        }
        Err(left("input"))
    }

    /// Takes `key`'s value out if it is `at` or `session`.
    fn took(&mut self, key: &str) -> Result<bool, A::Error> {
        match key {
            "session" if self.session.is_none() => self.session = Some(self.map.next_value()?),
            "at" if self.at.is_none() => self.at = Some(self.map.next_value()?),
            "session" | "at" => return Err(left(key)),
            _ => return Ok(false),
        }
        Ok(true)
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for &mut Rest<'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        if let Some(tag) = self.tag.take() {
            return seed
                .deserialize(BorrowedStrDeserializer::new(tag))
                .map(Some);
        }
        while let Some(key) = self.map.next_key::<&'de str>()? {
            if self.took(key)? {
                continue;
            }
            if matches!(key, "input" | "output" | "meta" | "session_end") {
                return Err(left(key));
            }
            self.fields += 1;
            return seed
                .deserialize(BorrowedStrDeserializer::new(key))
                .map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// The rest of the line to the machine's type: an internally tagged enum (the model's) reads it
/// as a map, its tag first; an externally tagged one (a mirror of it) as an enum, the tag's value
/// naming the variant, whose fields are the entries after it.
impl<'de, A: MapAccess<'de>> Deserializer<'de> for &mut Rest<'de, A> {
    type Error = A::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_map(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        // The tag is read as the variant's name, not handed over as a key.
        self.tag = None;
        visitor.visit_enum(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct identifier
        ignored_any
    }
}

impl<'de, A: MapAccess<'de>> EnumAccess<'de> for &mut Rest<'de, A> {
    type Error = A::Error;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), A::Error> {
        let name: &'de str = self.map.next_value()?;
        let variant = seed.deserialize(BorrowedStrDeserializer::new(name))?;
        Ok((variant, self))
    }
}

impl<'de, A: MapAccess<'de>> VariantAccess<'de> for &mut Rest<'de, A> {
    type Error = A::Error;

    /// A variant without fields: any other entry leaves the line to the typed structs. The model's
    /// internally tagged enum passes over such entries, but only once it has buffered them, which
    /// serde_json refuses beyond its depth limit; passed over here unbuffered, a deep one would be
    /// taken where the typed structs refuse it.
    fn unit_variant(mut self) -> Result<(), A::Error> {
        match self.next_key::<IgnoredAny>()? {
            None => Ok(()),
            Some(_) => Err(left("an entry beside a kind without fields")),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _: T) -> Result<T::Value, A::Error> {
        Err(left("a newtype variant"))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value, A::Error> {
        Err(left("a tuple variant"))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        visitor.visit_map(self)
    }
}

/// The error that leaves a line to the typed structs (they word the line's real error).
fn left<E: de::Error>(key: &str) -> E {
    E::custom(format_args!("`{key}` is left to the typed structs"))
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Map, Value};
    use turnfence_model::fence::FenceMachine;
    use turnfence_model::turn::TurnMachine;

    use super::super::read_typed;
    use super::*;

    /// Lines only a hostile or careless writer produces: a kind's key in a nested object, a
    /// kind's key spaced from its colon, the tag last, bare inputs, session ends, blanks around;
    /// numbers that are no `u64` or too big for their field, raw control characters and escapes
    /// in values, extra keys beside a kind without fields, a child's kind or a terminal state in
    /// the wrong form (the turn machine's one pass reads them through its mirrors).
    const ODD: &str = r#"{"at":1,"input":"spawn","turn":"t","child":"c","kind":{"tool":{"output":1}}}
{"at":1,"input":"spawn","turn":"t","child":"c","kind":{"tool":{"name":"x","cancellable":false,"output":1}}}
{"at":1,"input" :"spawn","turn":"t","child":"c","kind":{"tool":{"name":"x","cancellable":false,"output":1}}}
{"at":1,"output" :"delivered","turn":"t","generation":1,"seq":1,"x":{"input":1}}
{"at":1,"output":"terminal","turn":"t","state":{"failed":{"code":"DEADLINE_EXCEEDED"}}}
{"at":1,"output":"stop_answered","turn":"t","request_id":"r","answer":{"already_terminal":{"state":"completed"}}}
{"input":"tick","at":1}
{"at":1,"input":"frame_played"}
{"at":1,"session":"f","input":"drop_event"}
{"at":5,"session":"s","session_end":true}
{"session_end":false}
 {"at":1,"input":"tick"} 
{ "at" : 1 ,	"input" : "delta" , "turn" : "t" , "generation" : 1 , "seq" : 1 }
{"at":01,"input":"tick"}
{"at":1e2,"input":"tick"}
{"at":1.0,"input":"tick"}
{"at":18446744073709551615,"input":"tick"}
{"at":18446744073709551616,"input":"tick"}
{"at":1,"input":"stop","turn":"t	x","request_id":"r"}
{"at":1,"input":"stop","turn":"t","request_id":"r\u00e9"}
{"at":1,"input":"stop","turn":"té","request_id":"r"}
{"at":1,"input":"speech_started","confidence":1}
{"at":1,"input":"speech_stopped","x":[1,{"y":true}],"z":null}
{"at":1,"input":"spawn","turn":"t","child":"c","kind":"tool"}
{"at":1,"input":"spawn","turn":"t","child":"c","kind":{"model":null}}
{"at":1,"input":"spawn","turn":"t","child":"c","kind":{"tool":{"name":"x","cancellable":true},"model":1}}
{"at":1,"output":"terminal","turn":"t","state":{"completed":{}}}
{"at":1,"output":"played","turn":"t","generation":1,"seq":1,"frames":4294967296}
{"at":1,"output":"delivered","turn":"t","generation":1,"seq":1}}
{"at":1,"output":"delivered","turn":"t","generation":1,"seq":1,}
{"at":1,"output":"delivered","turn":"t","generation":1,"seq":true}"#;

    /// Every line of every fixture, the gate's scenarios as a trace, and the odd lines.
    fn corpus() -> Vec<String> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
        let mut files: Vec<_> = ["accepted", "rejected"]
            .iter()
            .flat_map(|d| std::fs::read_dir(root.join(d)).expect("fixtures are readable"))
            .map(|e| e.expect("a fixture").path())
            .collect();
        files.sort();
        let mut lines: Vec<String> = files
            .iter()
            .flat_map(|f| {
                let text = std::fs::read_to_string(f).expect("a fixture is text");
                text.lines().map(str::to_owned).collect::<Vec<_>>()
            })
            .collect();
        lines.extend(crate::gate::synthetic::SyntheticTrace::new(8).lines_as_strings());
        lines.extend(ODD.lines().map(str::to_owned));
        // Objects nested deep, within serde_json's limit and beyond it.
        for depth in [60, 200] {
            let (open, close) = ("{\"a\":".repeat(depth), "}".repeat(depth));
            lines.push(format!(
                "{{\"at\":1,\"input\":\"speech_stopped\",\"x\":{open}1{close}}}"
            ));
        }
        lines
    }

    /// The line broken or bent every way that matters to the one pass: keys removed, doubled,
    /// reordered, escaped, spaced; values of every JSON type; keys of other kinds added.
    fn variants(line: &str) -> Vec<String> {
        let Ok(Value::Object(m)) = serde_json::from_str::<Value>(line) else {
            return Vec::new();
        };
        let keys: Vec<String> = m.keys().cloned().collect();
        type Entries = Vec<(String, Value)>;
        let with = |f: &dyn Fn(&mut Entries)| {
            let mut entries: Entries = m.clone().into_iter().collect();
            f(&mut entries);
            Value::Object(entries.into_iter().collect::<Map<_, _>>()).to_string()
        };
        let values = [
            json!(null),
            json!(""),
            json!("x"),
            json!(0),
            json!(-1),
            json!(1.5),
            json!(true),
            json!({}),
            json!([]),
            json!({"input": 1}),
        ];
        let extra = [
            r#""at":1"#,
            r#""at":null"#,
            r#""session":"s""#,
            r#""session":null"#,
            r#""session":"""#,
            r#""input":"tick""#,
            r#""output":"delivered""#,
            r#""meta":{}"#,
            r#""session_end":true"#,
            r#""colour":1"#,
            r#""turn":"t""#,
            r#""\u0061t":1"#,
            r#""x":{"output":1}"#,
        ];
        let mut out = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            out.push(with(&|e| drop(e.remove(i))));
            out.push(with(&|e| {
                let entry = e.remove(i);
                e.insert(0, entry);
            }));
            out.push(with(&|e| {
                let entry = e.remove(i);
                e.push(entry);
            }));
            for v in &values {
                out.push(with(&|e| e[i].1 = v.clone()));
            }
            let body = line.trim_end().strip_suffix('}').unwrap_or(line);
            out.push(format!("{body},\"{key}\":{}}}", m[key]));
            let quoted = format!("\"{key}\":");
            out.push(line.replacen(&quoted, &format!("\"{key}\" :"), 1));
            let first = key.chars().next().map_or(0, u32::from);
            let escaped = format!("\"\\u{first:04x}{}\":", &key[1..]);
            out.push(line.replacen(&quoted, &escaped, 1));
            if let Some(Value::String(s)) = m.get(key).filter(|v| v.as_str() != Some("")) {
                let c = s.chars().next().map_or(0, u32::from);
                let from = format!("{quoted}\"{s}\"");
                let to = format!(
                    "{quoted}\"\\u{c:04x}{}\"",
                    &s[s.chars().next().map_or(0, char::len_utf8)..]
                );
                out.push(line.replacen(&from, &to, 1));
            }
        }
        out.push(with(&|e| e.reverse()));
        out.push(line.replace("\":", "\" :"));
        for after in ["}", ",", " x", "{}"] {
            out.push(format!("{line}{after}"));
        }
        let inner = line.trim().trim_start_matches('{').trim_end_matches('}');
        for x in extra {
            out.push(format!("{{{x},{inner}}}"));
            out.push(format!("{{{inner},{x}}}"));
        }
        out
    }

    /// Where the one pass gives an event, the typed structs give the same one.
    fn agree<S: Conform>(line: &str, taken: &mut usize, refused: &mut usize)
    where
        S::Input: LineInput,
    {
        match (read::<S>(line), read_typed::<S>(line, 1)) {
            (Some(one), Ok(typed)) => {
                assert_eq!(format!("{one:?}"), format!("{typed:?}"), "{line}");
                *taken += 1;
            }
            (Some(one), Err(e)) => panic!("{line}\nthe one pass gives {one:?}\nthe structs: {e}"),
            (None, Err(_)) => *refused += 1,
            (None, Ok(_)) => {}
        }
    }

    /// A line's keys and tags: lines of one shape are bent the same ways.
    fn shape(line: &str) -> String {
        let tags = ["input", "output", "session_end"];
        match serde_json::from_str::<Map<String, Value>>(line) {
            Ok(m) => m
                .iter()
                .map(|(k, v)| match (tags.contains(&k.as_str()), v) {
                    (true, Value::String(tag)) => format!("{k}={tag}"),
                    _ => k.clone(),
                })
                .collect::<Vec<_>>()
                .join(","),
            Err(_) => line.to_owned(),
        }
    }

    #[test]
    fn gives_what_the_typed_structs_give() {
        let (mut taken, mut refused) = (0, 0);
        let mut shapes = std::collections::HashSet::new();
        for line in corpus() {
            let bent = match shapes.insert(shape(&line)) {
                true => variants(&line),
                false => Vec::new(),
            };
            for l in std::iter::once(line).chain(bent) {
                agree::<TurnMachine>(&l, &mut taken, &mut refused);
                agree::<FenceMachine>(&l, &mut taken, &mut refused);
            }
        }
        // Neither side of the comparison is empty.
        assert!(
            taken > 5_000 && refused > 20_000,
            "{taken} taken, {refused} refused"
        );
    }

    /// The pass is the fast path: a plain trace (the gate's scenarios, as `check`'s benchmark
    /// streams them) is read by it alone, every input, output and session end, none left to the
    /// typed structs — and so are lines holding a nested object, an input's (a tool child's kind)
    /// and an output's (a failed turn's state), whose kind the pass checks against what the
    /// typed structs would take before it keeps them, and inputs of no field but their tag.
    #[test]
    fn reads_every_line_of_a_plain_trace_itself() {
        let mut lines = crate::gate::synthetic::SyntheticTrace::new(2).lines_as_strings();
        lines.extend([
            r#"{"at":1,"session":"s","input":"spawn","turn":"t1","child":"lookup","kind":{"tool":{"name":"order.lookup","cancellable":true}}}"#.to_owned(),
            r#"{"at":9,"session":"s","output":"terminal","turn":"t1","state":{"failed":{"code":"DEADLINE_EXCEEDED"}}}"#.to_owned(),
            // Inputs of no field but their tag (bare), with a session and without.
            r#"{"at":10,"session":"s","input":"tick"}"#.to_owned(),
            r#"{"at":11,"input":"speech_stopped"}"#.to_owned(),
        ]);
        let mut kinds = std::collections::BTreeSet::new();
        for line in &lines {
            let event = read::<TurnMachine>(line);
            kinds.insert(match event {
                Some(Event::Input { .. }) => "input",
                Some(Event::Output { .. }) => "output",
                Some(Event::End { .. }) => "session end",
                Some(
                    Event::Meta(_)
                    | Event::Fact { .. }
                    | Event::NotJudged { .. }
                    | Event::Held { .. }
                    | Event::Begin { .. },
                )
                | None => panic!("left over: {line}"),
            });
        }
        assert_eq!(kinds.len(), 3, "{kinds:?}");
        // A fence trace too: bare ticks and dropped events, supervisor steps with a lost ack and
        // without (after its meta line, which is the structs' to read).
        let fence = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "../fixtures/accepted/0122_fence_mismatch_ack_lost_resend_sees_no_row_never_a_seal.jsonl",
        );
        let text = std::fs::read_to_string(fence).expect("the fixture is readable");
        let lines: Vec<&str> = text.lines().skip(1).collect();
        let extra = [r#"{"at":20000,"session":"s","input":"drop_event"}"#];
        for line in lines.into_iter().chain(extra) {
            assert!(
                matches!(
                    read::<FenceMachine>(line),
                    Some(Event::Input { .. } | Event::Output { .. } | Event::End { .. })
                ),
                "left over: {line}"
            );
        }
    }
}
