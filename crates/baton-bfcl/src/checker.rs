//! BFCL's `ast_checker` as vendored by LiC (Python branch, `model_name = "gpt-4o"`).
//!
//! Every container access goes through the Python-semantics helpers of [`crate::value`], so a
//! sample that makes upstream raise (an undocumented function, an unknown type, an array
//! without `items`, ...) raises here too, at the same point of the evaluation order.

use std::borrow::Cow;

use serde_json::Value as Json;

use crate::decode::CallParts;
use crate::error::BfclError;
use crate::object::Object;
use crate::value::{
    PyType, Raise, Value, dict_get_str, lookups_left, py_contains, py_eq, py_getitem,
    py_getitem_str, py_index_iter, py_iter, py_len, set_lookups_left, spend, standardize_string,
    standardized_equal,
};

/// A node of the sample's function documents or reference answer, read where it lies in
/// the sample's JSON.
///
/// Of the reference answer, the list, each call's dict and its parameters' dict are read in
/// place, and only the candidate list of a parameter the checker compares is converted.
///
/// The checker reads of a document only its `name` and `parameters`, their `properties`
/// and `required`, and of each parameter's schema its `type` and `items` (of which only the
/// `type`); it looks keys up and never iterates over these objects. An object is looked
/// into in place; anything else is converted as `json.load` builds it and indexed with
/// Python semantics, so a malformed document raises where upstream raises, with the same
/// message. Converting every document into [`Value`]s (each key and text copied) and
/// freeing them again was a sixth of the actions evaluator's time.
enum Doc<'a> {
    Json(&'a Json),
    Value(Value<'a>),
}

impl<'a> Doc<'a> {
    /// `self[key]` for a str key.
    ///
    /// A key found in an object of the sample's JSON (nearly every lookup) is returned
    /// inline; everything else (a miss raises, anything else converts) out of line, so the
    /// common lookup does not pay that path's frame.
    #[inline]
    fn get_str(&self, key: &str) -> Result<Doc<'a>, BfclError> {
        if let Doc::Json(Json::Object(map)) = self
            && let Some(found) = field(map, key)
        {
            return Ok(Doc::Json(found));
        }
        self.get_str_other(key)
    }

    /// [`Doc::get_str`] where the key is not a field of an object of the sample's JSON.
    #[cold]
    #[inline(never)]
    fn get_str_other(&self, key: &str) -> Result<Doc<'a>, BfclError> {
        match self {
            Doc::Json(Json::Object(map)) => field(map, key)
                .map(Doc::Json)
                .ok_or_else(|| Raise::new("KeyError", Value::str(key).repr()).into()),
            Doc::Json(other) => Ok(Doc::Value(
                py_getitem_str(&Value::from_json(other), key)?.into_owned(),
            )),
            Doc::Value(v) => Ok(Doc::Value(py_getitem_str(v, key)?.into_owned())),
        }
    }

    /// `self[key]`.
    fn get(&self, key: &Value) -> Result<Doc<'a>, BfclError> {
        match (self, key) {
            (Doc::Json(Json::Array(items)), Value::Int(i))
                if i.to_usize().is_some_and(|i| i < items.len()) =>
            {
                Ok(Doc::Json(&items[i.to_usize().unwrap_or_default()]))
            }
            (Doc::Json(Json::Object(map)), Value::Str(k)) => field(map, k)
                .map(Doc::Json)
                .ok_or_else(|| Raise::new("KeyError", key.repr()).into()),
            // No other key equals a str key: `unhashable` or `KeyError` as for any dict.
            (Doc::Json(Json::Object(_)), other) => Ok(Doc::Value(
                py_getitem(&Value::Dict(Vec::new()), other)?.into_owned(),
            )),
            (Doc::Json(other), _) => Ok(Doc::Value(
                py_getitem(&Value::from_json(other), key)?.into_owned(),
            )),
            (Doc::Value(v), _) => Ok(Doc::Value(py_getitem(v, key)?.into_owned())),
        }
    }

    /// `len(self)`.
    fn len(&self) -> Result<usize, BfclError> {
        Ok(match self {
            Doc::Json(Json::Array(items)) => items.len(),
            other => py_len(&other.value())?,
        })
    }

    /// `[self[i] for i in range(len(self))]`.
    fn index_items(&self) -> Result<Vec<Doc<'a>>, BfclError> {
        Ok(match self {
            Doc::Json(Json::Array(items)) => items.iter().map(Doc::Json).collect(),
            other => py_index_iter(&other.value())?
                .iter()
                .map(|v| Doc::Value(v.clone()))
                .collect(),
        })
    }

    /// `list(self.keys())[0]`: a key of the sample's JSON borrowed, not copied.
    fn first_key(&self) -> Result<Key<'a>, BfclError> {
        match self {
            Doc::Json(Json::Object(map)) => map
                .keys()
                .next()
                .map(|k| Key::Str(k))
                .ok_or_else(|| Raise::new("IndexError", "list index out of range").into()),
            other => first_key(&other.value()).cloned().map(Key::Value),
        }
    }

    /// `list(self.values())[0]`.
    fn first_value(&self) -> Result<Doc<'a>, BfclError> {
        match self {
            Doc::Json(Json::Object(map)) => map
                .values()
                .next()
                .map(Doc::Json)
                .ok_or_else(|| Raise::new("IndexError", "list index out of range").into()),
            other => match &*other.value() {
                Value::Dict(items) => items
                    .first()
                    .map(|(_, v)| Doc::Value(v.clone()))
                    .ok_or_else(|| Raise::new("IndexError", "list index out of range").into()),
                v => Err(Raise::new(
                    "AttributeError",
                    format!("'{}' object has no attribute 'values'", v.py_type().name()),
                )
                .into()),
            },
        }
    }

    /// `item in self`.
    fn contains(&self, item: &Value) -> Result<bool, BfclError> {
        Ok(match (self, item) {
            (Doc::Json(Json::Object(map)), Value::Str(k)) => field(map, k).is_some(),
            (Doc::Json(Json::Object(_)), other) => py_contains(&Value::Dict(Vec::new()), other)?,
            (Doc::Json(other), _) => py_contains(&Value::from_json(other), item)?,
            (Doc::Value(v), _) => py_contains(v, item)?,
        })
    }

    /// The node as a Python object.
    fn value(&self) -> Cow<'_, Value<'a>> {
        match self {
            Doc::Json(json) => Cow::Owned(Value::from_json(json)),
            Doc::Value(v) => Cow::Borrowed(v),
        }
    }

    /// The text of a str node.
    fn as_str(&self) -> Option<&str> {
        match self {
            Doc::Json(Json::String(t)) => Some(t),
            Doc::Value(Value::Str(t)) => Some(t),
            _ => None,
        }
    }
}

/// A dict key the checker reads from the sample: a str key of its JSON borrowed, or a
/// converted [`Value`].
enum Key<'a> {
    Str(&'a str),
    Value(Value<'a>),
}

/// `map[key]`: a document's objects hold a few keys, which a scan compares in less time
/// than hashing the key takes; a large object is looked up by hash.
#[inline]
fn field<'a>(map: &'a serde_json::Map<String, Json>, key: &str) -> Option<&'a Json> {
    if map.len() > 16 {
        return map.get(key);
    }
    map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
}

/// `item in container` for an item of the sample's JSON, without converting a str item
/// looked up in a dict.
fn contains_json(container: &Value, item: &Json) -> Result<bool, BfclError> {
    Ok(match (container, item) {
        (Value::Dict(items), Json::String(key)) => dict_get_str(items, key).is_some(),
        _ => py_contains(container, &Value::from_json(item))?,
    })
}

/// `PYTHON_TYPE_MAPPING[description]` for a document's `type` node.
#[inline]
fn doc_type(description: &Doc<'_>) -> Result<PyType, BfclError> {
    match description.as_str().and_then(type_of_name) {
        Some(t) => Ok(t),
        None => doc_type_other(description),
    }
}

/// [`doc_type`] of anything but a known type name, out of line.
#[cold]
#[inline(never)]
fn doc_type_other(description: &Doc<'_>) -> Result<PyType, BfclError> {
    python_type(&description.value())
}

/// `PYTHON_TYPE_MAPPING` for a str.
fn type_of_name(name: &str) -> Option<PyType> {
    match name {
        "string" | "any" => Some(PyType::Str),
        "integer" => Some(PyType::Int),
        "float" => Some(PyType::Float),
        "boolean" => Some(PyType::Bool),
        "array" | "tuple" => Some(PyType::List),
        "dict" => Some(PyType::Dict),
        _ => None,
    }
}

/// The outcome of one checker function (`{"valid", "error", "error_type"}` upstream).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckResult {
    /// Whether the output passed.
    pub valid: bool,
    /// BFCL's `error` list (messages, or structured sub-errors for the parallel checker).
    pub errors: Vec<serde_json::Value>,
    /// BFCL's `error_type`, e.g. `value_error:string` (one of the checker's own names, so
    /// a failed attempt that is dropped allocates nothing for it).
    pub error_type: &'static str,
    /// `type_checker`'s `is_variable` flag.
    pub is_variable: bool,
}

impl CheckResult {
    fn ok() -> Self {
        CheckResult {
            valid: true,
            errors: Vec::new(),
            error_type: "",
            is_variable: false,
        }
    }

    fn fail(error_type: &'static str, message: impl Into<String>) -> Self {
        CheckResult {
            valid: false,
            errors: vec![serde_json::Value::String(message.into())],
            error_type,
            is_variable: false,
        }
    }
}

type Checked = Result<CheckResult, BfclError>;

/// One item of the model's output, the dict `{name: {param: value}}` LiC's `ast_parse`
/// returns: a [`Value`] (the public [`ast_checker`]) or a decoded [`CallParts`], read alike.
pub(crate) trait ModelOutput {
    /// `self[name]` if `name in self`, looked up as [`dict_get_str`] looks (spending the
    /// same lookups); `None` where `self` is not a dict and must be read as a Python object.
    fn get_str(&self, name: &str) -> Option<Option<&Value<'_>>>;

    /// The item as a Python object.
    fn value(&self) -> Cow<'_, Value<'_>>;

    /// [`Value::to_json`] of [`ModelOutput::value`].
    fn to_json(&self) -> Json;
}

impl ModelOutput for Value<'_> {
    fn get_str(&self, name: &str) -> Option<Option<&Value<'_>>> {
        match self {
            Value::Dict(items) => Some(dict_get_str(items, name)),
            _ => None,
        }
    }

    fn value(&self) -> Cow<'_, Value<'_>> {
        Cow::Borrowed(self)
    }

    fn to_json(&self) -> Json {
        Value::to_json(self)
    }
}

impl ModelOutput for CallParts<'_> {
    /// The dict's one key compared, after spending one lookup as [`dict_get_str`] does.
    fn get_str(&self, name: &str) -> Option<Option<&Value<'_>>> {
        Some((spend(1) && self.name == name).then_some(&self.params))
    }

    fn value(&self) -> Cow<'_, Value<'_>> {
        Cow::Owned(Value::Dict(vec![(
            Value::Str(Cow::Borrowed(&self.name)),
            self.params.clone(),
        )]))
    }

    /// As [`Value::to_json`] renders the dict, without building it.
    fn to_json(&self) -> Json {
        Json::Object(std::iter::once((self.name.to_string(), self.params.to_json())).collect())
    }
}

/// Whether a failing check writes its messages. A parallel answer is first checked against
/// the calls without them: most attempts fail on the way to a match and are dropped, and
/// writing each one's messages (the reprs of the value and its candidates) was a fifth of
/// the checker's work. Only an answer that no call matches is checked again with them.
/// A check's outcome (validity, `error_type`, `is_variable`, what it raises) is the same
/// either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Messages {
    Write,
    Skip,
}

/// A failed check of `error_type`, with the message `message` builds unless `messages`
/// says to skip it.
fn failing(
    error_type: &'static str,
    messages: Messages,
    message: impl FnOnce() -> String,
) -> CheckResult {
    CheckResult {
        valid: false,
        errors: match messages {
            Messages::Write => vec![serde_json::Value::String(message())],
            Messages::Skip => Vec::new(),
        },
        error_type,
        is_variable: false,
    }
}

/// `f"Invalid value for parameter {param!r}: {value!r}. Expected one of {answers!r}{ending}"`,
/// the value checkers' message, written into one buffer: formatting the three reprs
/// separately allocated and grew a text for each.
fn invalid_value(param: &Value, value: &Value, answers: &Value, ending: &str) -> String {
    let mut out = String::with_capacity(128);
    out.push_str("Invalid value for parameter ");
    param.push_repr(&mut out);
    out.push_str(": ");
    value.push_repr(&mut out);
    out.push_str(". Expected one of ");
    answers.push_repr(&mut out);
    out.push_str(ending);
    out
}

fn s(text: &str) -> Value<'_> {
    Value::str(text)
}

/// `v == ""` (a str equals only a str), without building the str.
fn is_empty_str(v: &Value) -> bool {
    matches!(v, Value::Str(t) if t.is_empty())
}

/// `text in container`, without building the str where the container is a str, list or
/// tuple.
fn contains_text(container: &Value, text: &str) -> Result<bool, BfclError> {
    Ok(match container {
        Value::Str(t) => t.contains(text),
        Value::List(items) | Value::Tuple(items) => items
            .iter()
            .any(|item| matches!(item, Value::Str(t) if t == text)),
        other => py_contains(other, &s(text))?,
    })
}

/// `standardize_value(a) == standardize_value(b)` without building either: two strs
/// compare standardized, a str equals nothing else, anything else compares as it is.
fn standardized_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => standardized_equal(x, y),
        _ => py_eq(a, b),
    }
}

/// `PYTHON_TYPE_MAPPING[description]`.
fn python_type(description: &Value) -> Result<PyType, BfclError> {
    if !description.is_hashable() {
        return Err(Raise::new(
            "TypeError",
            format!("unhashable type: '{}'", description.py_type().name()),
        )
        .into());
    }
    let mapped = match description {
        Value::Str(t) => type_of_name(t),
        _ => None,
    };
    mapped.ok_or_else(|| Raise::new("KeyError", description.repr()).into())
}

fn type_str(t: PyType) -> String {
    format!("<class '{}'>", t.name())
}

/// `list(d.keys())[0]`.
fn first_key<'d, 'a>(d: &'d Value<'a>) -> Result<&'d Value<'a>, BfclError> {
    match d {
        Value::Dict(items) => items
            .first()
            .map(|(k, _)| k)
            .ok_or_else(|| Raise::new("IndexError", "list index out of range").into()),
        other => Err(Raise::new(
            "AttributeError",
            format!(
                "'{}' object has no attribute 'keys'",
                other.py_type().name()
            ),
        )
        .into()),
    }
}

/// `d.items()`.
fn dict_items<'d, 'a>(d: &'d Value<'a>) -> Result<&'d [(Value<'a>, Value<'a>)], BfclError> {
    match d {
        Value::Dict(items) => Ok(items),
        other => Err(Raise::new(
            "AttributeError",
            format!(
                "'{}' object has no attribute 'items'",
                other.py_type().name()
            ),
        )
        .into()),
    }
}

/// `ast_checker(func_description, model_output, possible_answer, language, test_category, model_name)`.
///
/// `func_description` and `possible_answer` are the sample's `function` and
/// `reference_answer` lists as JSON, read in place.
pub fn ast_checker(
    func_description: &Json,
    model_output: &[Value],
    possible_answer: &Json,
    test_category: &Value,
) -> Checked {
    if contains_text(test_category, "parallel")? {
        parallel_function_checker_no_order(func_description, model_output, possible_answer)
    } else if contains_text(test_category, "multiple")? {
        multiple_function_checker(func_description, model_output, possible_answer)
    } else {
        single_function_checker(func_description, model_output, possible_answer)
    }
}

/// [`ast_checker`] for a str `test_category`, read where it lies in the sample instead of
/// copied into a [`Value`].
pub(crate) fn ast_checker_for(
    func_description: &Json,
    model_output: &[CallParts<'_>],
    possible_answer: &Json,
    test_category: &str,
) -> Checked {
    if test_category.contains("parallel") {
        parallel_function_checker_no_order(func_description, model_output, possible_answer)
    } else if test_category.contains("multiple") {
        multiple_function_checker(func_description, model_output, possible_answer)
    } else {
        single_function_checker(func_description, model_output, possible_answer)
    }
}

/// The simple category's branch of `ast_checker`.
fn single_function_checker(
    func_description: &Json,
    model_output: &[impl ModelOutput],
    possible_answer: &Json,
) -> Checked {
    if model_output.len() != 1 {
        return Ok(CheckResult::fail(
            "simple_function_checker:wrong_count",
            "Wrong number of functions.",
        ));
    }
    let description = match func_description {
        Json::Array(items) if !items.is_empty() => Doc::Json(&items[0]),
        other => Doc::Json(other).get(&Value::int(0))?,
    };
    let answer = Doc::Json(possible_answer).get(&Value::int(0))?;
    let expected = Expected::read(&description, &answer)?;
    simple_function_checker(&expected, &model_output[0], Messages::Write)
}

/// The document of the function named `name` (borrowed: it is read, never changed).
fn find_description<'a>(descriptions: &'a Json, name: &Key<'_>) -> Result<Doc<'a>, BfclError> {
    static NONE: Json = Json::Null;
    if let Json::Array(items) = descriptions {
        for d in items {
            let found = Doc::Json(d).get_str("name")?;
            let equal = match (found.as_str(), name) {
                (Some(a), Key::Str(b)) => a == *b,
                (Some(a), Key::Value(Value::Str(b))) => a == b,
                (_, Key::Str(b)) => py_eq(&found.value(), &s(b)),
                (_, Key::Value(v)) => py_eq(&found.value(), v),
            };
            if equal {
                return Ok(Doc::Json(d));
            }
        }
        return Ok(Doc::Json(&NONE));
    }
    Ok(Doc::Json(descriptions))
}

fn multiple_function_checker(
    descriptions: &Json,
    model_output: &[impl ModelOutput],
    answers: &Json,
) -> Checked {
    let answers = Doc::Json(answers);
    if model_output.len() != answers.len()? {
        return Ok(CheckResult::fail(
            "multiple_function_checker:wrong_count",
            "Wrong number of functions.",
        ));
    }
    let answer = answers.get(&Value::int(0))?;
    let description = find_description(descriptions, &answer.first_key()?)?;
    let Some(call) = model_output.first() else {
        return Err(Raise::new("IndexError", "list index out of range").into());
    };
    simple_function_checker(
        &Expected::read(&description, &answer)?,
        call,
        Messages::Write,
    )
}

/// One failed attempt of the parallel checker, as its `errors` list it.
static SUB_ERROR: Object<4> = Object::new([
    "model_index",
    "sub_error",
    "sub_error_type",
    "model_output_item",
]);

fn parallel_function_checker_no_order(
    descriptions: &Json,
    model_output: &[impl ModelOutput],
    answers: &Json,
) -> Checked {
    let answers = Doc::Json(answers);
    if model_output.len() != answers.len()? {
        return Ok(CheckResult::fail(
            "parallel_function_checker_no_order:wrong_count",
            "Wrong number of functions.",
        ));
    }
    let mut matched: Vec<usize> = Vec::new();
    for (i, answer) in answers.index_items()?.iter().enumerate() {
        let expected = answer.first_key()?;
        let description = find_description(descriptions, &expected)?;
        // Read once for the answer (at its first try, where each try read it first).
        let mut read: Option<Expected<'_>> = None;
        // The failed attempts are kept as they are and written out as JSON only if no call
        // matches this answer: most attempts fail on the way to a match, and rendering each
        // (the call's JSON above all) was most of the parallel checker's own work.
        // The last call not yet matched is checked with its messages (if it fails, no call
        // matches and they are read); the calls before it without, and again with them
        // only if no call matches.
        let last_unmatched = (0..model_output.len()).rev().find(|j| !matched.contains(j));
        let mut failed: Vec<(usize, Option<CheckResult>)> = Vec::new();
        let mut last_valid = true;
        let budget_before = lookups_left();
        let mut budget_before_last = budget_before;
        for (index, call) in model_output.iter().enumerate() {
            if matched.contains(&index) {
                continue;
            }
            let messages = if Some(index) == last_unmatched {
                budget_before_last = lookups_left();
                Messages::Write
            } else {
                Messages::Skip
            };
            let expected = match &read {
                Some(expected) => expected,
                None => read.insert(Expected::read(&description, answer)?),
            };
            let result = simple_function_checker(expected, call, messages)?;
            last_valid = result.valid;
            if result.valid {
                matched.push(index);
                break;
            }
            failed.push((index, (messages == Messages::Write).then_some(result)));
        }
        if !last_valid {
            // The attempts checked without messages again, with them: from the lookup
            // budget they started with, so that they spend (and run out) as they did, and
            // the budget is left where the first pass left it.
            let budget_after = lookups_left();
            set_lookups_left(budget_before);
            let mut results = Vec::with_capacity(failed.len());
            for (index, result) in failed {
                let result = match result {
                    Some(result) => result,
                    None => {
                        let call = &model_output[index];
                        // Read at the answer's first try, which this call was.
                        let expected = match &read {
                            Some(expected) => expected,
                            None => read.insert(Expected::read(&description, answer)?),
                        };
                        simple_function_checker(expected, call, Messages::Write)?
                    }
                };
                results.push((index, result));
            }
            debug_assert_eq!(lookups_left(), budget_before_last);
            set_lookups_left(budget_after);
            let mut all_errors: Vec<serde_json::Value> = results
                .into_iter()
                .map(|(index, result)| {
                    // Built in place: json! would serialize the errors to copy them.
                    SUB_ERROR.with([
                        index.into(),
                        result.errors.into(),
                        result.error_type.into(),
                        model_output[index].to_json(),
                    ])
                })
                .collect();
            let considered: Vec<usize> = (0..model_output.len())
                .filter(|j| !matched.contains(j))
                .collect();
            all_errors.insert(
                0,
                serde_json::Value::String(format!(
                    "Could not find a matching function among index {considered:?} of model output for index {i} of possible answers."
                )),
            );
            return Ok(CheckResult {
                valid: false,
                errors: all_errors,
                error_type: "parallel_function_checker_no_order:cannot_find_match",
                is_variable: false,
            });
        }
    }
    Ok(CheckResult::ok())
}

/// What `simple_function_checker` reads of a function's description and of a possible
/// answer before it looks at the call: the same for every call an answer is tried against,
/// so the parallel checker reads it once per answer instead of once per answer–call pair.
///
/// These reads spend nothing from the lookup budget (the description and the answer are the
/// sample's JSON: an object is looked into in place, and anything else converted is never a
/// dict, so a lookup in it raises), and an answer is always tried against at least one call,
/// so reading them once, at the first try, raises what each try would have raised first and
/// leaves the budget as it was.
struct Expected<'a> {
    possible_answer: Doc<'a>,
    func_name: Doc<'a>,
    param_details: Doc<'a>,
    required_params: Doc<'a>,
}

impl<'a> Expected<'a> {
    /// `list(possible_answer.values())[0]`, then the description's `name`, `parameters`,
    /// and of those `properties` and `required`, in `simple_function_checker`'s order.
    fn read(description: &Doc<'a>, possible_answer: &Doc<'a>) -> Result<Self, BfclError> {
        let possible_answer = possible_answer.first_value()?;
        let func_name = description.get_str("name")?;
        let parameters = description.get_str("parameters")?;
        let param_details = parameters.get_str("properties")?;
        let required_params = parameters.get_str("required")?;
        Ok(Expected {
            possible_answer,
            func_name,
            param_details,
            required_params,
        })
    }
}

/// `simple_function_checker` for one call dict `{name: {param: value}}` and one possible
/// answer, its description's and answer's parts read by [`Expected::read`].
fn simple_function_checker(
    expected: &Expected<'_>,
    model_output: &impl ModelOutput,
    messages: Messages,
) -> Checked {
    let Expected {
        possible_answer,
        func_name,
        param_details,
        required_params,
    } = expected;
    // convert_func_name: `"." in function_name` (no renaming for gpt-4o).
    if func_name.as_str().is_none() {
        py_contains(&func_name.value(), &s("."))?;
    }

    // `func_name in model_output` and `model_output[func_name]`, a str name looked up in
    // place.
    let looked_up = func_name
        .as_str()
        .and_then(|name| model_output.get_str(name));
    let model_params = match looked_up {
        Some(found) => found.map(Cow::Borrowed),
        None => {
            let name = func_name.value();
            let model_output = model_output.value();
            if py_contains(&model_output, &name)? {
                Some(Cow::Owned(py_getitem(&model_output, &name)?.into_owned()))
            } else {
                None
            }
        }
    };
    let Some(model_params) = model_params else {
        return Ok(failing(
            "simple_function_checker:wrong_func_name",
            messages,
            || {
                format!(
                    "Function name {} not found in model output.",
                    func_name.value().repr()
                )
            },
        ));
    };

    if let Doc::Json(Json::Array(required)) = &required_params {
        for param in required {
            if !contains_json(&model_params, param)? {
                return Ok(failing(
                    "simple_function_checker:missing_required",
                    messages,
                    || {
                        format!(
                            "Missing required parameter: {}.",
                            Value::from_json(param).repr()
                        )
                    },
                ));
            }
        }
    } else {
        for param in py_iter(&required_params.value())?.iter() {
            if !py_contains(&model_params, param)? {
                return Ok(failing(
                    "simple_function_checker:missing_required",
                    messages,
                    || format!("Missing required parameter: {}.", param.repr()),
                ));
            }
        }
    }

    for (param, value) in dict_items(&model_params)? {
        // `param not in param_details or param not in possible_answer`, then
        // `param_details[param]` and (below) `possible_answer[param]`: a str key is looked
        // up once in each where both are objects of the sample's JSON.
        let found = match (&param_details, &possible_answer, param) {
            (
                Doc::Json(Json::Object(in_details)),
                Doc::Json(Json::Object(in_answer)),
                Value::Str(k),
            ) => field(in_details, k)
                .zip(field(in_answer, k))
                .map(|(d, a)| (Doc::Json(d), Some(Doc::Json(a)))),
            _ => {
                if param_details.contains(param)? && possible_answer.contains(param)? {
                    Some((param_details.get(param)?, None))
                } else {
                    None
                }
            }
        };
        let Some((details, answers)) = found else {
            return Ok(failing(
                "simple_function_checker:unexpected_param",
                messages,
                || format!("Unexpected parameter: {}.", param.repr()),
            ));
        };
        let type_description = details.get_str("type")?;
        let expected = doc_type(&type_description)?;
        let type_name = type_description.as_str();
        let nested = if matches!(type_name, Some("array" | "tuple")) {
            Some(doc_type(&details.get_str("items")?.get_str("type")?)?)
        } else {
            None
        };
        let mut value = Cow::Borrowed(value);
        if type_name == Some("tuple")
            && let Value::Tuple(items) = &*value
        {
            value = Cow::Owned(Value::List(items.clone()));
        }
        if type_name == Some("float")
            && let Value::Int(i) = &*value
        {
            match i.to_f64().filter(|f| f.is_finite()) {
                Some(f) => value = Cow::Owned(Value::Float(f)),
                None => {
                    return Err(
                        Raise::new("OverflowError", "int too large to convert to float").into(),
                    );
                }
            }
        }
        let answers = match answers {
            Some(answers) => answers,
            None => possible_answer.get(param)?,
        };
        // Most values are decided against the candidates where they lie in the sample; a
        // failure is the one the checkers below report, its message written from the
        // converted candidates only when it is read.
        let in_place = match expected {
            PyType::Str => string_passes_in_place(&value, &answers)
                .map(|passes| (passes, "value_error:string", ". Case insensitive.")),
            PyType::Int | PyType::Float | PyType::Bool => {
                scalar_passes_in_place(&value, expected, &answers)
                    .map(|passes| (passes, "value_error:others", "."))
            }
            PyType::List => list_passes_in_place(&value, nested, &answers)
                .map(|passes| (passes, "value_error:list/tuple", ".")),
            _ => None,
        };
        match in_place {
            Some((true, _, _)) => continue,
            Some((false, error_type, ending)) => {
                return Ok(failing(error_type, messages, || {
                    invalid_value(param, &value, &answers.value(), ending)
                }));
            }
            None => {}
        }
        let answers = answers.value();
        let description_text: Cow<str> = match type_name {
            Some(t) => Cow::Borrowed(t),
            None => Cow::Owned(type_description.value().repr()),
        };
        let type_check = type_checker(
            param,
            &value,
            &answers,
            &description_text,
            expected,
            nested,
            messages,
        )?;
        if !type_check.valid {
            return Ok(type_check);
        }
        if !type_check.is_variable {
            let special = match (expected, nested) {
                (PyType::Dict, _) => Some(dict_checker(&value, &answers, messages)?),
                (PyType::List, Some(PyType::Dict)) => {
                    Some(list_dict_checker(&value, &answers, messages)?)
                }
                (PyType::Str, _) => Some(string_checker(param, &value, &answers, messages)?),
                (PyType::List, _) => Some(list_checker(param, &value, &answers, messages)?),
                _ => None,
            };
            if let Some(result) = special {
                if !result.valid {
                    return Ok(result);
                }
                continue;
            }
        }
        if !py_contains(&answers, &value)? {
            return Ok(failing("value_error:others", messages, || {
                invalid_value(param, &value, &answers, ".")
            }));
        }
    }

    let missing_optional = |param: &Value| {
        failing("simple_function_checker:missing_optional", messages, || {
            format!(
                "Optional parameter {} not provided and not marked as optional.",
                param.repr()
            )
        })
    };
    if let Doc::Json(Json::Object(map)) = &possible_answer {
        for (param, allowed) in map {
            let provided = match &*model_params {
                Value::Dict(items) => dict_get_str(items, param).is_some(),
                other => py_contains(other, &Value::str(param.as_str()))?,
            };
            let optional = match allowed {
                Json::Array(items) => items.iter().any(|a| a.as_str() == Some("")),
                other => contains_text(&Value::from_json(other), "")?,
            };
            if !provided && !optional {
                return Ok(missing_optional(&Value::str(param.as_str())));
            }
        }
    } else {
        let possible_answer = possible_answer.value();
        for param in py_iter(&possible_answer)?.iter() {
            if !py_contains(&model_params, param)?
                && !contains_text(&*py_getitem(&possible_answer, param)?, "")?
            {
                return Ok(missing_optional(param));
            }
        }
    }
    Ok(CheckResult::ok())
}

/// Whether a str value for a `string` parameter passes `type_checker` and `string_checker`
/// against a JSON list of str candidates, read in place: its type is the one expected and
/// the first candidate that is not `""` (if any) is a str, so it is no variable and only
/// `string_checker` decides, passing when one candidate standardizes as it does. `None`
/// where the candidates must be converted to tell.
fn string_passes_in_place(value: &Value, answers: &Doc<'_>) -> Option<bool> {
    let (Value::Str(text), Doc::Json(Json::Array(candidates))) = (value, answers) else {
        return None;
    };
    let first_set = candidates.iter().find(|c| c.as_str() != Some(""));
    if first_set.is_some_and(|c| !c.is_string()) {
        return None;
    }
    Some(
        candidates
            .iter()
            .any(|c| matches!(c, Json::String(a) if standardized_equal(text, a))),
    )
}

/// The Python type `json.load` gives a JSON scalar, or `None` for a container.
fn json_scalar_type(json: &Json) -> Option<PyType> {
    match json {
        Json::Null => Some(PyType::NoneType),
        Json::Bool(_) => Some(PyType::Bool),
        Json::Number(n) if n.is_i64() || n.is_u64() => Some(PyType::Int),
        Json::Number(_) => Some(PyType::Float),
        Json::String(_) => Some(PyType::Str),
        Json::Array(_) | Json::Object(_) => None,
    }
}

/// `value == json.load(candidate)`, without converting a candidate of the value's own kind.
fn equals_json(value: &Value, candidate: &Json) -> bool {
    match (value, candidate) {
        (Value::Int(i), Json::Number(n)) if n.is_i64() => i.to_i64() == n.as_i64(),
        (Value::Int(i), Json::Number(n)) if n.is_u64() => i.to_u64() == n.as_u64(),
        (Value::Float(x), Json::Number(n)) if n.is_f64() => n.as_f64() == Some(*x),
        (Value::Bool(a), Json::Bool(b)) => a == b,
        (Value::Str(a), Json::String(b)) => a == b,
        _ => py_eq(value, &Value::from_json(candidate)),
    }
}

/// Whether an int, float or bool value passes `type_checker` and the final membership test
/// against a JSON list of candidates, read in place: its type is the one expected and that
/// of the first candidate that is not `""` (so it is no variable and only the membership
/// test decides), passing when a candidate equals it. `None` where the candidates must be
/// converted to tell.
fn scalar_passes_in_place(value: &Value, expected: PyType, answers: &Doc<'_>) -> Option<bool> {
    let Doc::Json(Json::Array(candidates)) = answers else {
        return None;
    };
    if value.py_type() != expected {
        return None;
    }
    let first_set = candidates.iter().find(|c| c.as_str() != Some(""));
    if first_set.is_some_and(|c| json_scalar_type(c) != Some(expected)) {
        return None;
    }
    Some(candidates.iter().any(|c| equals_json(value, c)))
}

/// Whether a list of scalars for an `array` or `tuple` parameter of scalars passes
/// `type_checker` and `list_checker` against a JSON list of candidates read in place.
///
/// It does when every item is of the nested type (so each inner type check passes against
/// any candidate), the first candidate that is not `""` is a list (so it is no variable),
/// every candidate is a list or `""` (which `list_checker` walks as an empty list), and one
/// candidate equals the value item by item, strs standardized. None of this spends lookups
/// or raises, and `list_checker` alone decides. `None` where the candidates must be
/// converted to tell.
fn list_passes_in_place(value: &Value, nested: Option<PyType>, answers: &Doc<'_>) -> Option<bool> {
    let (Value::List(items), Doc::Json(Json::Array(candidates))) = (value, answers) else {
        return None;
    };
    let Some(nested @ (PyType::Str | PyType::Int | PyType::Float | PyType::Bool)) = nested else {
        return None;
    };
    if !items.iter().all(|item| item.py_type() == nested) {
        return None;
    }
    let first_set = candidates.iter().find(|c| c.as_str() != Some(""));
    if !first_set.is_some_and(Json::is_array) {
        return None;
    }
    if !candidates
        .iter()
        .all(|c| c.is_array() || c.as_str() == Some(""))
    {
        return None;
    }
    Some(candidates.iter().any(|candidate| {
        match candidate {
            Json::Array(elements) => {
                elements.len() == items.len()
                    && items
                        .iter()
                        .zip(elements)
                        .all(|(item, element)| match (item, element) {
                            (Value::Str(a), Json::String(b)) => standardized_equal(a, b),
                            (Value::Str(_), _) => false,
                            _ => equals_json(item, element),
                        })
            }
            _ => items.is_empty(),
        }
    }))
}

/// `get_possible_answer_type`: the type of the first candidate that is not `""`.
fn possible_answer_type(answers: &Value) -> Result<Option<PyType>, BfclError> {
    for answer in py_iter(answers)?.iter() {
        if !is_empty_str(answer) {
            return Ok(Some(answer.py_type()));
        }
    }
    Ok(None)
}

fn type_checker(
    param: &Value,
    value: &Value,
    answers: &Value,
    description: &str,
    expected: PyType,
    nested: Option<PyType>,
    messages: Messages,
) -> Checked {
    let mut result = CheckResult {
        valid: true,
        errors: Vec::new(),
        // Set where the result fails: a passing one's is never read.
        error_type: "",
        is_variable: false,
    };
    let answer_type = possible_answer_type(answers)?;
    let is_variable = answer_type.is_some_and(|t| t != expected);
    if value.py_type() == expected {
        let Some(nested) = nested else {
            result.is_variable = is_variable;
            return Ok(result);
        };
        for candidate in py_iter(answers)?.iter() {
            let mut flag = true;
            if matches!(candidate, Value::List(_)) {
                for item in py_iter(value)?.iter() {
                    // Only its validity is read: its messages are never built.
                    let inner = type_checker(
                        param,
                        item,
                        candidate,
                        // Upstream's `str(nested_type)`, quoted only in the inner check's
                        // messages, which are never written.
                        "",
                        nested,
                        None,
                        Messages::Skip,
                    )?;
                    if !inner.valid {
                        flag = false;
                        break;
                    }
                }
            }
            if flag {
                return Ok(CheckResult {
                    is_variable,
                    ..CheckResult::ok()
                });
            }
        }
        result.valid = false;
        if messages == Messages::Write {
            result.errors = vec![serde_json::Value::String(format!(
                "Nested type checking failed for parameter {}. Expected outer type {description} with inner type {}. Parameter value: {}.",
                param.repr(),
                type_str(nested),
                value.repr()
            ))];
        }
        result.error_type = "type_error:nested";
    }
    if possible_answer_type(answers)?.is_some_and(|t| value.py_type() == t) {
        result.is_variable = true;
        return Ok(result);
    }
    result.valid = false;
    if messages == Messages::Write {
        result.errors.push(serde_json::Value::String(format!(
            "Incorrect type for parameter {}. Expected type {description}, got {}. Parameter value: {}.",
            param.repr(),
            value.py_type().name(),
            value.repr()
        )));
    }
    result.error_type = "type_error:simple";
    Ok(result)
}

fn standardize_value(v: Value) -> Value {
    match v {
        Value::Str(text) => Value::str(standardize_string(&text)),
        other => other,
    }
}

fn string_checker(param: &Value, value: &Value, answers: &Value, messages: Messages) -> Checked {
    let Value::Str(text) = value else {
        return Err(BfclError::not_reproduced("string_checker on a non-string"));
    };
    // `standardize_string(value) in [standardize_string(a) for a in answers]`, compared
    // without building the standardized texts where both are ASCII.
    let found = py_index_iter(answers)?
        .iter()
        .any(|answer| matches!(answer, Value::Str(a) if standardized_equal(text, a)));
    if !found {
        return Ok(failing("value_error:string", messages, || {
            invalid_value(param, value, answers, ". Case insensitive.")
        }));
    }
    Ok(CheckResult::ok())
}

fn list_checker(param: &Value, value: &Value, answers: &Value, messages: Messages) -> Checked {
    // Every candidate is walked (and may raise) before any is compared, as upstream builds
    // the standardized lists first; they are compared item by item without being built.
    let model = py_iter(value)?;
    let answers_list = py_index_iter(answers)?;
    let candidates = answers_list
        .iter()
        .map(py_index_iter)
        .collect::<Result<Vec<_>, _>>()?;
    let matches = |c: &[Value]| {
        model.len() == c.len() && model.iter().zip(c).all(|(m, a)| standardized_eq(m, a))
    };
    if !candidates.iter().any(|c| matches(c)) {
        return Ok(failing("value_error:list/tuple", messages, || {
            invalid_value(param, value, answers, ".")
        }));
    }
    Ok(CheckResult::ok())
}

fn dict_checker(value: &Value, answers: &Value, messages: Messages) -> Checked {
    let mut result = CheckResult::fail("dict_checker:unclear", "");
    result.errors.clear();
    for answer in py_index_iter(answers)?.iter() {
        if is_empty_str(answer) {
            continue;
        }
        result = CheckResult::fail("dict_checker:unclear", "");
        result.errors.clear();
        let mut flag = true;
        for (key, v) in dict_items(value)? {
            if !py_contains(answer, key)? {
                if messages == Messages::Write {
                    result.errors.push(serde_json::Value::String(format!(
                        "Unexpected dict key parameter: '{}'.",
                        display(key)
                    )));
                }
                result.error_type = "value_error:dict_key";
                flag = false;
                break;
            }
            let allowed = py_getitem(answer, key)?;
            let allowed = py_index_iter(&allowed)?;
            if !allowed.iter().any(|c| standardized_eq(v, c)) {
                if messages == Messages::Write {
                    let candidates: Vec<Value> =
                        allowed.iter().cloned().map(standardize_value).collect();
                    result.errors.push(serde_json::Value::String(invalid_value(
                        key,
                        v,
                        &Value::List(candidates),
                        ".",
                    )));
                }
                result.error_type = "value_error:dict_value";
                flag = false;
                break;
            }
        }
        for (key, allowed) in dict_items(answer)? {
            if !py_contains(value, key)? && !contains_text(allowed, "")? {
                if messages == Messages::Write {
                    result.errors.push(serde_json::Value::String(format!(
                        "Missing dict key parameter: '{}'.",
                        display(key)
                    )));
                }
                result.error_type = "value_error:dict_key";
                flag = false;
                break;
            }
        }
        if flag {
            return Ok(CheckResult::ok());
        }
    }
    Ok(result)
}

fn list_dict_checker(value: &Value, answers: &Value, messages: Messages) -> Checked {
    let mut result = CheckResult::fail("list_dict_checker:unclear", "");
    result.errors.clear();
    let items = py_index_iter(value)?;
    for answer in py_index_iter(answers)?.iter() {
        if items.len() != py_len(answer)? {
            result = failing("value_error:list_dict_count", messages, || {
                "Wrong number of dictionaries in the list.".into()
            });
            continue;
        }
        let mut flag = true;
        for (index, item) in items.iter().enumerate() {
            let candidate = py_getitem(answer, &Value::int(index as i64))?;
            result = dict_checker(item, &Value::List(vec![candidate.into_owned()]), messages)?;
            if !result.valid {
                flag = false;
                break;
            }
        }
        if flag {
            return Ok(CheckResult::ok());
        }
    }
    Ok(result)
}

/// `str(x)` for a dict key in messages.
fn display(v: &Value) -> String {
    match v {
        Value::Str(t) => t.to_string(),
        other => other.repr(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::parse_calls;
    use serde_json::json;

    fn check(function: serde_json::Value, answer: serde_json::Value, response: &str) -> Checked {
        let calls: Vec<Value> = parse_calls(response)
            .unwrap()
            .into_iter()
            .map(|c| c.into_value())
            .collect();
        ast_checker(
            &function,
            &calls,
            &answer,
            &s(if calls.len() == 1 {
                "simple"
            } else {
                "parallel"
            }),
        )
    }

    fn doc(props: serde_json::Value) -> serde_json::Value {
        json!([{"name": "f", "parameters": {"type": "dict", "properties": props, "required": []}}])
    }

    #[test]
    fn dict_and_list_of_dict_parameters() {
        let d = doc(json!({"m": {"type": "dict"}}));
        let answer = json!([{"f": {"m": [{"city": ["Paris", "paris"], "n": [1, ""]}]}}]);
        assert!(
            check(d.clone(), answer.clone(), "f(m={'city': 'PARIS'})")
                .unwrap()
                .valid
        );
        let missing = check(d.clone(), answer.clone(), "f(m={'n': 1})").unwrap();
        assert_eq!(missing.error_type, "value_error:dict_key");
        let extra = check(d, answer, "f(m={'city': 'Paris', 'zip': 1})").unwrap();
        assert_eq!(extra.error_type, "value_error:dict_key");

        let l = doc(json!({"m": {"type": "array", "items": {"type": "dict"}}}));
        let answer = json!([{"f": {"m": [[{"a": [1]}, {"a": [2]}]]}}]);
        assert!(
            check(l.clone(), answer.clone(), "f(m=[{'a': 1}, {'a': 2}])")
                .unwrap()
                .valid
        );
        assert!(
            !check(l.clone(), answer.clone(), "f(m=[{'a': 2}, {'a': 1}])")
                .unwrap()
                .valid
        );
        let count = check(l, answer, "f(m=[{'a': 1}])").unwrap();
        assert_eq!(count.error_type, "value_error:list_dict_count");
    }

    #[test]
    fn tuple_nested_and_variable_types() {
        let t = doc(json!({"p": {"type": "tuple", "items": {"type": "integer"}}}));
        let answer = json!([{"f": {"p": [[1, 2]]}}]);
        assert!(
            check(t.clone(), answer.clone(), "f(p=(1, 2))")
                .unwrap()
                .valid
        );
        assert!(
            check(t.clone(), answer.clone(), "f(p=[1, 2])")
                .unwrap()
                .valid
        );
        let nested = check(t, answer, "f(p=[1, 2.0])").unwrap();
        assert_eq!(nested.error_type, "type_error:nested");

        let a = doc(json!({"p": {"type": "array", "items": {"type": "string"}}}));
        let tuple_for_array = check(a, json!([{"f": {"p": [["x"]]}}]), "f(p=('x',))").unwrap();
        assert_eq!(tuple_for_array.error_type, "type_error:simple");

        // A string answer for an integer parameter marks a variable: plain membership.
        let v = doc(json!({"n": {"type": "integer"}}));
        assert!(
            check(v.clone(), json!([{"f": {"n": ["count"]}}]), "f(n=count)")
                .unwrap()
                .valid
        );
        assert!(
            !check(v, json!([{"f": {"n": ["count"]}}]), "f(n='Count')")
                .unwrap()
                .valid
        );
    }

    /// What `check` raises, as `(kind, message)`.
    fn raised(
        function: serde_json::Value,
        answer: serde_json::Value,
        response: &str,
    ) -> (String, String) {
        match check(function, answer, response) {
            Err(BfclError::Raise { kind, message }) => (kind.to_string(), message),
            other => panic!("expected a raise, got {other:?}"),
        }
    }

    #[test]
    fn malformed_documents_raise_as_upstream() {
        let answer = json!([{"f": {"p": [1]}}]);
        let raise = |kind: &str, message: &str| (kind.to_string(), message.to_string());
        assert_eq!(
            raised(json!([{"parameters": {}}]), answer.clone(), "f(p=1)"),
            raise("KeyError", "'name'")
        );
        assert_eq!(
            raised(
                json!([{"name": "f", "parameters": {"properties": ["p"], "required": []}}]),
                answer.clone(),
                "f(p=1)"
            ),
            raise(
                "TypeError",
                "list indices must be integers or slices, not str"
            )
        );
        assert_eq!(
            raised(
                json!([{"name": "f", "parameters": {"properties": {"p": {"type": ["integer"]}}, "required": []}}]),
                answer.clone(),
                "f(p=1)"
            ),
            raise("TypeError", "unhashable type: 'list'")
        );
        assert_eq!(
            raised(
                json!([{"name": "f", "parameters": {"properties": {"p": {"type": "array", "items": {}}}, "required": []}}]),
                json!([{"f": {"p": [[1]]}}]),
                "f(p=[1])"
            ),
            raise("KeyError", "'type'")
        );
        assert_eq!(
            raised(json!([]), answer.clone(), "f(p=1)"),
            raise("IndexError", "list index out of range")
        );
        // The reference answer is read in place too, and raises alike.
        let ok = json!([{"name": "f", "parameters": {"properties": {"p": {"type": "integer"}}, "required": []}}]);
        assert_eq!(
            raised(ok.clone(), json!(["abc"]), "f(p=1)"),
            raise("AttributeError", "'str' object has no attribute 'values'")
        );
        assert_eq!(
            raised(ok.clone(), json!([{}]), "f(p=1)"),
            raise("IndexError", "list index out of range")
        );
        assert_eq!(
            raised(ok.clone(), json!([{"f": {"p": [1], "q": 2}}]), "f(p=1)"),
            raise("TypeError", "argument of type 'int' is not iterable")
        );
        // A str marks a parameter optional when it holds "" (every str does).
        assert!(
            check(ok, json!([{"f": {"p": [1], "q": "abc"}}]), "f(p=1)")
                .unwrap()
                .valid
        );
        // A str `required` is iterated by character, a list of other objects compared as is.
        let by_char = json!([{"name": "f", "parameters": {"properties": {"p": {"type": "integer"}}, "required": "pq"}}]);
        let missing = check(by_char, answer.clone(), "f(p=1)").unwrap();
        assert_eq!(
            missing.errors,
            vec![json!("Missing required parameter: 'q'.")]
        );
        let numbers = json!([{"name": "f", "parameters": {"properties": {"p": {"type": "integer"}}, "required": [1]}}]);
        let missing = check(numbers, answer, "f(p=1)").unwrap();
        assert_eq!(
            missing.errors,
            vec![json!("Missing required parameter: 1.")]
        );
    }

    #[test]
    fn numbers_compare_with_json_candidates_as_python() {
        let int = doc(json!({"n": {"type": "integer"}}));
        let big = json!([{"f": {"n": [18446744073709551615u64, ""]}}]);
        let valid = |d: &serde_json::Value, a: &serde_json::Value, r: &str| {
            check(d.clone(), a.clone(), r).unwrap().valid
        };
        assert!(valid(&int, &big, "f(n=18446744073709551615)"));
        assert!(valid(&int, &big, "f(n=0xFFFFFFFFFFFFFFFF)"));
        assert!(!valid(&int, &big, "f(n=18446744073709551616)"));
        assert!(!valid(&int, &big, "f(n=-1)"));
        let negative = json!([{"f": {"n": [-9223372036854775808i64]}}]);
        assert!(valid(&int, &negative, "f(n=-9223372036854775808)"));
        assert!(!valid(&int, &negative, "f(n=-9223372036854775809)"));
        // A float candidate for an integer parameter makes it a variable: `1 in [1.0]`.
        assert!(valid(&int, &json!([{"f": {"n": [1.0]}}]), "f(n=1)"));
        let float = doc(json!({"x": {"type": "float"}}));
        let tenth = json!([{"f": {"x": [0.1, 2]}}]);
        assert!(valid(&float, &tenth, "f(x=0.1)"));
        assert!(valid(&float, &tenth, "f(x=2)"));
        assert!(!valid(&float, &tenth, "f(x=0.2)"));
        let flag = doc(json!({"b": {"type": "boolean"}}));
        assert!(valid(&flag, &json!([{"f": {"b": [true]}}]), "f(b=True)"));
        assert!(!valid(&flag, &json!([{"f": {"b": [true]}}]), "f(b=False)"));
        assert!(!valid(&flag, &json!([{"f": {"b": [true]}}]), "f(b=1)"));
    }

    /// A parallel answer no call matches lists every attempt with its messages, those
    /// first checked without them included; a matched answer's failed attempts are dropped.
    #[test]
    fn unmatched_parallel_answer_lists_every_attempt_with_its_messages() {
        let d = doc(json!({"p": {"type": "integer"}, "s": {"type": "string"}}));
        let answer = json!([{"f": {"p": [2], "s": ["x", ""]}}, {"f": {"p": [7], "s": ["y"]}}]);
        // Answer 0 matches call 1 after call 0 failed; answer 1 fails on call 0.
        let result = check(d.clone(), answer.clone(), "f(p=1, s='y'), f(p=2, s='x')").unwrap();
        assert_eq!(
            result.error_type,
            "parallel_function_checker_no_order:cannot_find_match"
        );
        assert_eq!(
            result.errors,
            vec![
                json!(
                    "Could not find a matching function among index [0] of model output for index 1 of possible answers."
                ),
                json!({"model_index": 0, "sub_error": ["Invalid value for parameter 'p': 1. Expected one of [7]."],
                    "sub_error_type": "value_error:others", "model_output_item": {"f": {"p": 1, "s": "y"}}}),
            ]
        );
        // Answer 0 fails on both calls, on an int and on a str.
        let result = check(d, answer, "f(p=1, s='x'), f(p=2, s='z')").unwrap();
        assert_eq!(
            result.errors,
            vec![
                json!(
                    "Could not find a matching function among index [0, 1] of model output for index 0 of possible answers."
                ),
                json!({"model_index": 0, "sub_error": ["Invalid value for parameter 'p': 1. Expected one of [2]."],
                    "sub_error_type": "value_error:others", "model_output_item": {"f": {"p": 1, "s": "x"}}}),
                json!({"model_index": 1, "sub_error": ["Invalid value for parameter 's': 'z'. Expected one of ['x', '']. Case insensitive."],
                    "sub_error_type": "value_error:string", "model_output_item": {"f": {"p": 2, "s": "z"}}}),
            ]
        );
    }

    /// Lists of scalars checked in place against the JSON candidates agree with upstream's
    /// rules: strs standardized, numbers compared as Python does, `""` an empty list, and a
    /// failure reported through the converted candidates.
    #[test]
    fn lists_of_scalars_compare_with_json_candidates_as_python() {
        let strs = doc(json!({"p": {"type": "array", "items": {"type": "string"}}}));
        let nums = doc(json!({"p": {"type": "array", "items": {"type": "float"}}}));
        let valid = |d: &serde_json::Value, a: serde_json::Value, r: &str| {
            check(d.clone(), a, r).unwrap().valid
        };
        let names = json!([{"f": {"p": [["New York", "LA"], ""]}}]);
        assert!(valid(&strs, names.clone(), "f(p=['new-york', 'la'])"));
        assert!(valid(&strs, names.clone(), "f(p=[])"));
        assert!(!valid(&strs, names.clone(), "f(p=['LA', 'New York'])"));
        assert!(!valid(
            &strs,
            json!([{"f": {"p": [["New York", "LA"]]}}]),
            "f(p=[])"
        ));
        assert!(valid(
            &nums,
            json!([{"f": {"p": [[1, 2.5]]}}]),
            "f(p=[1.0, 2.5])"
        ));
        assert!(!valid(
            &nums,
            json!([{"f": {"p": [[1, 2.5]]}}]),
            "f(p=[1.5, 2.5])"
        ));
        // An int item for a float list fails the nested type check.
        let nested = check(nums, json!([{"f": {"p": [[1.0]]}}]), "f(p=[1])").unwrap();
        assert_eq!(nested.error_type, "type_error:nested");
        let wrong = check(strs, names, "f(p=['Boston'])").unwrap();
        assert_eq!(wrong.error_type, "value_error:list/tuple");
        assert_eq!(
            wrong.errors,
            vec![json!(
                "Invalid value for parameter 'p': ['Boston']. Expected one of [['New York', 'LA'], '']."
            )]
        );
    }

    #[test]
    fn raises_where_upstream_raises() {
        let no_items = doc(json!({"p": {"type": "array"}}));
        assert!(check(no_items, json!([{"f": {"p": [["x"]]}}]), "f(p=['x'])").is_err());
        let unknown = doc(json!({"p": {"type": "number"}}));
        assert!(check(unknown, json!([{"f": {"p": [1]}}]), "f(p=1)").is_err());
        let ok = doc(json!({"p": {"type": "integer"}}));
        let undocumented = json!([{"f": {"p": [1]}}, {"g": {"p": [1]}}]);
        assert!(check(ok, undocumented, "f(p=1), g(p=1)").is_err());
        // The unknown type is never looked at when the parameter is omitted.
        let optional = doc(json!({"p": {"type": "number"}}));
        assert!(
            check(optional, json!([{"f": {"p": [1, ""]}}]), "f()")
                .unwrap()
                .valid
        );
    }
}
