//! The commands an admin socket answers, as Ceph's AdminSocket keeps them
//! (src/common/admin_socket.cc; docs/research/admin-socket.md §1–§3): a
//! table of signatures in Ceph's descriptor syntax, each with its help and
//! its hook, looked up by the exact prefix a client sends, the arguments
//! checked against the signature first. The built-in ones are every Ceph
//! daemon's: `version`, `git_version`, `help`, `get_command_descriptions`,
//! `perf dump`, `perf schema` (and their old names), `config show`,
//! `config get`, and `messenger dump` for the messengers added.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::json::{Object, Value};
use crate::perf::Collection;

/// EINVAL, ENOENT: the errors Ceph's hooks return most.
pub const EINVAL: i32 = 22;
/// ENOENT: no such command, counter or entry.
pub const ENOENT: i32 = 2;

/// A command that failed: Ceph's return code and its reason, written as
/// `ERROR: (22) Invalid argument\n<reason>\n` (the protocol has no other
/// place for a code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandError {
    /// The return code (a positive errno).
    pub errno: i32,
    /// Why the command failed.
    pub reason: String,
}

impl CommandError {
    /// An EINVAL error with `reason`.
    pub fn invalid(reason: impl Into<String>) -> CommandError {
        CommandError {
            errno: EINVAL,
            reason: reason.into(),
        }
    }

    /// The reply body Ceph writes for it.
    pub fn body(&self) -> String {
        let what = match self.errno {
            ENOENT => "No such file or directory",
            EINVAL => "Invalid argument",
            _ => "Unknown error",
        };
        format!("ERROR: ({}) {what}\n{}\n", self.errno, self.reason)
    }
}

/// What a hook answers: a value the client's format renders, or text as is.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A value rendered in the client's format (JSON by default).
    Json(Value),
    /// Text sent as is.
    Raw(String),
}

/// A command as received: its prefix and its arguments (the JSON object's
/// other members).
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The command's `prefix` member.
    pub prefix: String,
    /// Every other member, in order.
    pub args: Vec<(String, Value)>,
}

impl Request {
    /// Argument `name`, if given.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.args.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }

    /// Argument `name` if it is a string.
    pub fn str(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(Value::as_str)
    }

    /// A repeated argument's strings (n=N).
    pub fn strs(&self, name: &str) -> Vec<String> {
        match self.get(name) {
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect(),
            Some(_) | None => Vec::new(),
        }
    }

    /// Whether argument `name` is `true`.
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some(Value::Bool(true)))
    }
}

/// A hook: runs a command.
pub type Hook = Arc<dyn Fn(&Request) -> Result<Answer, CommandError> + Send + Sync>;

/// One argument of a signature (`name=var,type=CephString,req=false`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Arg {
    /// Every `key=value` of the descriptor, sorted by key (as Ceph dumps them).
    fields: BTreeMap<String, String>,
}

impl Arg {
    fn field(&self, key: &str) -> Option<&str> {
        self.fields.get(key).map(String::as_str)
    }

    fn name(&self) -> &str {
        self.field("name").unwrap_or_default()
    }

    fn required(&self) -> bool {
        self.field("req") != Some("false")
    }

    fn repeated(&self) -> bool {
        matches!(self.field("n"), Some("n" | "N"))
    }

    /// Whether `v` fits this argument's type (validate_cmd).
    fn accepts(&self, v: &Value) -> bool {
        if self.repeated() {
            if let Value::Array(items) = v {
                return items.iter().all(|i| self.accepts_one(i));
            }
        }
        self.accepts_one(v)
    }

    fn accepts_one(&self, v: &Value) -> bool {
        match (self.field("type").unwrap_or_default(), v) {
            ("CephBool", Value::Bool(_)) => true,
            ("CephInt", Value::Number(n)) => n.is_u64() || n.is_i64(),
            ("CephFloat", Value::Number(_)) => true,
            ("CephChoices", Value::String(s)) => self
                .field("strings")
                .is_some_and(|all| all.split('|').any(|c| c == s)),
            ("CephBool" | "CephInt" | "CephFloat" | "CephChoices", _) => false,
            (_, Value::String(_)) => true,
            _ => false,
        }
    }
}

/// A signature: its literal words (the prefix) and its arguments.
#[derive(Debug, Clone)]
struct Signature {
    prefix: String,
    args: Vec<Arg>,
}

impl Signature {
    /// Parses Ceph's descriptor syntax: words without `=` are literal,
    /// the others `key=value,key=value` descriptors.
    fn parse(sig: &str) -> Signature {
        let mut words = Vec::new();
        let mut args = Vec::new();
        for w in sig.split_whitespace() {
            if !w.contains('=') {
                words.push(w);
                continue;
            }
            let fields = w
                .split(',')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            args.push(Arg { fields });
        }
        Signature {
            prefix: words.join(" "),
            args,
        }
    }

    /// `get_command_descriptions`' `sig`: literal words as strings, each
    /// descriptor an object of its fields (all strings, as Ceph 16 writes
    /// them; both CLIs read them).
    fn describe(&self) -> Value {
        let mut out: Vec<Value> = self.prefix.split(' ').map(Value::from).collect();
        for a in &self.args {
            let mut o = Object::new();
            for (k, v) in &a.fields {
                o.set(k, v.as_str());
            }
            out.push(o.into_value());
        }
        Value::Array(out)
    }

    /// Checks `req`'s arguments against the signature.
    fn validate(&self, req: &Request) -> Result<(), CommandError> {
        for a in &self.args {
            let ok = match req.get(a.name()) {
                Some(v) => a.accepts(v),
                None => !a.required(),
            };
            if !ok {
                return Err(CommandError::invalid("invalid command json"));
            }
        }
        Ok(())
    }
}

struct Entry {
    sig: Signature,
    help: String,
    hook: Hook,
}

/// What `version` and `git_version` say.
#[derive(Debug, Clone)]
pub struct Version {
    /// `version`: the version string.
    pub version: String,
    /// `release`: the release name.
    pub release: String,
    /// `release_type`: dev, rc or stable.
    pub release_type: String,
    /// `git_version`: the commit the build is from.
    pub git_version: String,
}

impl Default for Version {
    fn default() -> Self {
        Version {
            version: env!("CARGO_PKG_VERSION").into(),
            release: "msgr".into(),
            release_type: "dev".into(),
            git_version: option_env!("MSGR_GIT_VERSION").unwrap_or("unknown").into(),
        }
    }
}

/// A messenger's `messenger dump`: given what to dump (`dumpcontents`,
/// empty for all) and whether TCP details are wanted.
pub type MessengerDump = Arc<dyn Fn(&[String], bool) -> Value + Send + Sync>;

#[derive(Default)]
struct Table {
    /// By prefix: Ceph's multimap order, which `help` and
    /// `get_command_descriptions` follow.
    entries: BTreeMap<String, Entry>,
    config: BTreeMap<String, String>,
    messengers: BTreeMap<String, MessengerDump>,
}

/// The table as the hooks that read it hold it: weakly (it holds them).
#[derive(Clone)]
struct TableRef(std::sync::Weak<Mutex<Table>>);

impl TableRef {
    /// `f` of the table; None once it is gone.
    fn read<R>(&self, f: impl FnOnce(&Table) -> R) -> Option<R> {
        let t = self.0.upgrade()?;
        let t = t.lock().unwrap_or_else(PoisonError::into_inner);
        Some(f(&t))
    }

    /// An object `fill` makes from the table (empty once it is gone).
    fn object(&self, fill: impl FnOnce(&Table, &mut Object)) -> Answer {
        let mut o = Object::new();
        self.read(|t| fill(t, &mut o));
        Answer::Json(o.into_value())
    }
}

/// The commands an admin socket answers (cheap to clone; clones share the
/// table).
///
/// ```
/// use std::sync::Arc;
/// use msgr_admin::commands::{Answer, Commands, Version};
/// use msgr_admin::json::Value;
/// use msgr_admin::perf::Collection;
///
/// let commands = Commands::new(Collection::new(), Version {
///     version: "1.0".into(),
///     release: "myapp".into(),
///     release_type: "stable".into(),
///     git_version: "0".into(),
/// });
/// // A command of our own, in Ceph's descriptor syntax.
/// commands.register(
///     "greet name=who,type=CephString",
///     "say hello",
///     Arc::new(|req| Ok(Answer::Json(Value::from(format!("hello {}", req.str("who").unwrap_or("?")))))),
/// );
/// // What a client's `{"prefix": ...}` gets back (AdminSocket serves it).
/// let body = msgr_admin::socket::answer(r#"{"prefix": "greet", "who": "ceph", "format": "json"}"#, &commands);
/// assert_eq!(body, r#""hello ceph""#);
/// let bad = msgr_admin::socket::answer(r#"{"prefix": "greet"}"#, &commands);
/// assert!(bad.starts_with("ERROR: (22) Invalid argument"), "{bad}");
/// ```
#[derive(Clone)]
pub struct Commands {
    table: Arc<Mutex<Table>>,
    perf: Collection,
}

impl Commands {
    /// Every daemon's commands, answering from `perf` and `version`.
    pub fn new(perf: Collection, version: Version) -> Commands {
        let c = Commands {
            table: Default::default(),
            perf,
        };
        c.register_builtins(version);
        c
    }

    /// The perf counters `perf dump` shows.
    pub fn perf(&self) -> &Collection {
        &self.perf
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers `sig` (Ceph's descriptor syntax) with `help` (empty:
    /// left out of `help`) and `hook`; replaces one of the same prefix.
    pub fn register(&self, sig: &str, help: &str, hook: Hook) {
        let sig = Signature::parse(sig);
        let entry = Entry {
            help: help.into(),
            hook,
            sig,
        };
        self.lock().entries.insert(entry.sig.prefix.clone(), entry);
    }

    /// Sets what `config show` and `config get` say of `option`.
    pub fn set_config(&self, option: &str, value: impl Into<String>) {
        self.lock().config.insert(option.into(), value.into());
    }

    /// Makes a messenger known to `messenger dump` as `name`.
    pub fn add_messenger(&self, name: &str, dump: MessengerDump) {
        self.lock().messengers.insert(name.into(), dump);
    }

    /// Drop the messenger dumped as `name`.
    pub fn remove_messenger(&self, name: &str) {
        self.lock().messengers.remove(name);
    }

    /// Runs `req`: the hook of its exact prefix, once its arguments fit.
    pub fn execute(&self, req: &Request) -> Result<Answer, CommandError> {
        let hook = {
            let t = self.lock();
            let Some(e) = t.entries.get(&req.prefix) else {
                return Err(CommandError::invalid(format!(
                    "unknown command prefix {}",
                    req.prefix
                )));
            };
            e.sig.validate(req)?;
            e.hook.clone()
        };
        hook(req)
    }

    fn register_builtins(&self, version: Version) {
        let table = TableRef(Arc::downgrade(&self.table));
        self.register("0", "", Arc::new(|_| Ok(Answer::Raw("2".into()))));
        let v = version.clone();
        self.register(
            "version",
            "get ceph version",
            Arc::new(move |_| {
                let mut o = Object::new();
                o.set("version", v.version.as_str())
                    .set("release", v.release.as_str())
                    .set("release_type", v.release_type.as_str());
                Ok(Answer::Json(o.into_value()))
            }),
        );
        let git = version.git_version;
        self.register(
            "git_version",
            "get git sha1",
            Arc::new(move |_| {
                let mut o = Object::new();
                o.set("git_version", git.as_str());
                Ok(Answer::Json(o.into_value()))
            }),
        );
        let t = table.clone();
        self.register(
            "help",
            "list available commands",
            Arc::new(move |_| {
                Ok(t.object(|t, o| {
                    for (prefix, e) in t.entries.iter().filter(|(_, e)| !e.help.is_empty()) {
                        o.set(prefix, e.help.as_str());
                    }
                }))
            }),
        );
        let t = table.clone();
        self.register(
            "get_command_descriptions",
            "list available commands",
            Arc::new(move |_| {
                Ok(t.object(|t, o| {
                    for (i, e) in t.entries.values().enumerate() {
                        let mut d = Object::new();
                        d.set("sig", e.sig.describe()).set("help", e.help.as_str());
                        o.set(&format!("cmd{i:03}"), d.into_value());
                    }
                }))
            }),
        );
        self.register_perf();
        self.register_config(table.clone());
        self.register_messenger_dump(table);
    }

    fn register_perf(&self) {
        let perf = self.perf.clone();
        let dump: Hook =
            Arc::new(move |r| Ok(Answer::Json(perf.dump(r.str("logger"), r.str("counter")))));
        let perf = self.perf.clone();
        let schema: Hook = Arc::new(move |_| Ok(Answer::Json(perf.schema(None, None))));
        self.register(
            "perf dump name=logger,type=CephString,req=false name=counter,type=CephString,req=false",
            "dump perfcounters value",
            dump.clone(),
        );
        self.register("perfcounters_dump", "", dump.clone());
        self.register("1", "", dump);
        self.register("perf schema", "dump perfcounters schema", schema.clone());
        self.register("perfcounters_schema", "", schema.clone());
        self.register("2", "", schema);
    }

    fn register_config(&self, table: TableRef) {
        let t = table.clone();
        self.register(
            "config show",
            "dump current config settings",
            Arc::new(move |_| {
                Ok(t.object(|t, o| {
                    for (k, v) in &t.config {
                        o.set(k, v.as_str());
                    }
                }))
            }),
        );
        self.register(
            "config get name=var,type=CephString",
            "config get <field>: get the config value",
            Arc::new(move |r| {
                let var = r.str("var").unwrap_or_default();
                let value = table.read(|t| t.config.get(var).cloned()).flatten();
                match value {
                    Some(v) => {
                        let mut o = Object::new();
                        o.set(var, v);
                        Ok(Answer::Json(o.into_value()))
                    }
                    None => Err(CommandError {
                        errno: ENOENT,
                        reason: format!("error getting '{var}': (2) No such file or directory"),
                    }),
                }
            }),
        );
    }

    fn register_messenger_dump(&self, table: TableRef) {
        self.register(
            "messenger dump name=msgr,type=CephString,req=false \
             name=dumpcontents,type=CephChoices,strings=all|listen_sockets|connections|anon_conns|accepting_conns|deleted_conns|by_type,n=N,req=false \
             name=tcp_info,type=CephBool,req=false",
            "dump messenger status",
            Arc::new(move |r| {
                let read = table.read(|t| {
                    let names: Vec<Value> = t.messengers.keys().map(|k| k.as_str().into()).collect();
                    let dump = r.str("msgr").map(|m| t.messengers.get(m).cloned());
                    (names, dump)
                });
                let Some((names, dump)) = read else {
                    return Ok(Answer::Json(Value::Null));
                };
                match (r.str("msgr"), dump) {
                    (None, _) => {
                        let mut o = Object::new();
                        o.set("messengers", Value::Array(names));
                        Ok(Answer::Json(o.into_value()))
                    }
                    (Some(name), Some(Some(dump))) => {
                        let contents = r.strs("dumpcontents");
                        let mut o = Object::new();
                        o.set("name", name).set("messenger", dump(&contents, r.flag("tcp_info")));
                        Ok(Answer::Json(o.into_value()))
                    }
                    (Some(_), _) => Err(CommandError {
                        errno: ENOENT,
                        reason: String::new(),
                    }),
                }
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands() -> Commands {
        Commands::new(Collection::new(), Version::default())
    }

    fn run(c: &Commands, json: &str) -> Result<Answer, CommandError> {
        let v = crate::json::parse(json).expect("test json");
        let Value::Object(mut fields) = v else {
            panic!("not an object")
        };
        let prefix = fields.shift_remove("prefix").expect("prefix");
        c.execute(&Request {
            prefix: prefix.as_str().expect("string").into(),
            args: fields.into_iter().collect(),
        })
    }

    #[test]
    fn descriptions_as_ceph_writes_them() {
        let c = commands();
        let Ok(Answer::Json(d)) = run(&c, r#"{"prefix":"get_command_descriptions"}"#) else {
            panic!("no descriptions")
        };
        let json = d.to_string();
        // Sorted by prefix, numbered from cmd000 ("0" sorts first).
        assert!(
            json.starts_with(r#"{"cmd000":{"sig":["0"],"help":""},"#),
            "{json}"
        );
        assert!(json.contains(
            r#"{"sig":["perf","dump",{"name":"logger","req":"false","type":"CephString"},{"name":"counter","req":"false","type":"CephString"}],"help":"dump perfcounters value"}"#
        ), "{json}");
        let Ok(Answer::Json(help)) = run(&c, r#"{"prefix":"help"}"#) else {
            panic!("no help")
        };
        assert_eq!(
            help.get("version").and_then(Value::as_str),
            Some("get ceph version")
        );
        assert!(
            help.get("perfcounters_dump").is_none(),
            "no help, not listed"
        );
    }

    #[test]
    fn arguments_are_checked_against_the_signature() {
        let c = commands();
        c.set_config("ms_bind_msgr1", "true");
        let got = run(&c, r#"{"prefix":"config get","var":"ms_bind_msgr1"}"#);
        assert_eq!(
            got.map(|a| match a {
                Answer::Json(v) => v.to_string(),
                Answer::Raw(s) => s,
            }),
            Ok(r#"{"ms_bind_msgr1":"true"}"#.into())
        );
        let missing = run(&c, r#"{"prefix":"config get"}"#).unwrap_err();
        assert_eq!(
            missing.body(),
            "ERROR: (22) Invalid argument\ninvalid command json\n"
        );
        let wrong_type = run(&c, r#"{"prefix":"perf dump","logger":5}"#).unwrap_err();
        assert_eq!(wrong_type.reason, "invalid command json");
        let unknown = run(&c, r#"{"prefix":"nosuch"}"#).unwrap_err();
        assert_eq!(
            unknown.body(),
            "ERROR: (22) Invalid argument\nunknown command prefix nosuch\n"
        );
        let no_option = run(&c, r#"{"prefix":"config get","var":"nosuch"}"#).unwrap_err();
        assert_eq!(
            no_option.body(),
            "ERROR: (2) No such file or directory\nerror getting 'nosuch': (2) No such file or directory\n"
        );
        // Extra members are ignored, as Ceph ignores them.
        assert!(run(&c, r#"{"prefix":"version","foo":"bar"}"#).is_ok());
        // A choice outside its strings is refused.
        let bad_choice = run(
            &c,
            r#"{"prefix":"messenger dump","msgr":"x","dumpcontents":["nope"]}"#,
        );
        assert_eq!(bad_choice.unwrap_err().reason, "invalid command json");
    }

    #[test]
    fn messenger_dump_lists_and_dumps() {
        let c = commands();
        c.add_messenger(
            "client",
            Arc::new(|contents: &[String], _| contents.to_vec().into()),
        );
        let list = run(&c, r#"{"prefix":"messenger dump"}"#);
        assert_eq!(
            list,
            Ok(Answer::Json(
                crate::json::parse(r#"{"messengers":["client"]}"#).unwrap()
            ))
        );
        let one = run(
            &c,
            r#"{"prefix":"messenger dump","msgr":"client","dumpcontents":["connections"]}"#,
        );
        assert_eq!(
            one,
            Ok(Answer::Json(
                crate::json::parse(r#"{"name":"client","messenger":["connections"]}"#).unwrap()
            ))
        );
        let unknown = run(&c, r#"{"prefix":"messenger dump","msgr":"other"}"#).unwrap_err();
        assert_eq!(unknown.body(), "ERROR: (2) No such file or directory\n\n");
    }
}
