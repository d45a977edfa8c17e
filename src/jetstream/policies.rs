//! The string-valued enums of stream and consumer configs, with nats-server's spellings.
//!
//! Unknown values fail with Go's text (`can not unmarshal "\"x\""`), which the request
//! decoder turns into 10025 `invalid JSON: ...` exactly as nats-server 2.15 answers.

use super::request::cannot_unmarshal;
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

/// Declares a wire enum: `Variant => "wire"` pairs (first spelling is written), plus
/// extra accepted input spellings `"alias" => Variant`.
macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $wire:literal),+ $(,)? }
     $(aliases { $($alias:literal => $target:ident),* })? $(case_insensitive $ci:ident)?
     $(unknown $unknown:path)?) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub enum $name { #[default] $($variant),+ }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire),+ }
            }

            pub fn parse(text: &str) -> Option<$name> {
                $(let $ci = text.to_ascii_lowercase(); let text = $ci.as_str();)?
                match text {
                    $($wire => Some($name::$variant),)+
                    $($($alias => Some($name::$target),)*)?
                    _ => None,
                }
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                #[allow(unused_variables, reason = "shadowed when the enum names its own message")]
                let message: fn(&str) -> String = cannot_unmarshal;
                $(let message: fn(&str) -> String = $unknown;)?
                $name::parse(&text).ok_or_else(|| de::Error::custom(message(&text)))
            }
        }
    };
}

wire_enum!(
    /// Stream `retention`.
    RetentionPolicy { Limits => "limits", Interest => "interest", WorkQueue => "workqueue" }
);
wire_enum!(
    /// Stream `discard`; nats-server lower-cases the input first.
    DiscardPolicy { Old => "old", New => "new" } case_insensitive lowered
);
wire_enum!(
    /// Stream `storage`.
    StorageType { File => "file", Memory => "memory" }
);
wire_enum!(
    /// Stream `compression` (echoed as `"none"` by default).
    Compression { None => "none", S2 => "s2" }
    unknown unknown_compression
);
wire_enum!(
    /// Stream `persist_mode` (2.12+); `default` is omitted on output.
    PersistMode { Default => "default", Async => "async" }
);
wire_enum!(
    /// Consumer `deliver_policy`; `"undefined"` is accepted as `all`.
    DeliverPolicy {
        All => "all",
        Last => "last",
        New => "new",
        ByStartSequence => "by_start_sequence",
        ByStartTime => "by_start_time",
        LastPerSubject => "last_per_subject",
    }
    aliases { "undefined" => All }
);
wire_enum!(
    /// Consumer `ack_policy`. Absent means `none` (Go's zero value), not `explicit`.
    AckPolicy { None => "none", All => "all", Explicit => "explicit", FlowControl => "flow_control" }
);
wire_enum!(
    /// Consumer `replay_policy`.
    ReplayPolicy { Instant => "instant", Original => "original" }
);
wire_enum!(
    /// Consumer `priority_policy` (2.11 priority groups); `none` is omitted on output.
    PriorityPolicy {
        None => "none",
        Overflow => "overflow",
        PinnedClient => "pinned_client",
        Prioritized => "prioritized",
    }
    unknown unknown_priority_policy
);
wire_enum!(
    /// `action` of a consumer create request: `""` create-or-update, `"create"`, `"update"`.
    ConsumerAction { CreateOrUpdate => "", Create => "create", Update => "update" }
    unknown unknown_consumer_action
);

/// Go words a bad consumer action differently from the other enums.
fn unknown_consumer_action(raw: &str) -> String {
    format!("unknown consumer action: \"{raw}\"")
}

fn unknown_priority_policy(raw: &str) -> String {
    format!("unknown priority policy: \"{raw}\"")
}

/// nats-server's `StoreCompression` decoder names no value.
fn unknown_compression(_raw: &str) -> String {
    "unknown compression algorithm".to_string()
}

impl PersistMode {
    pub fn is_default(&self) -> bool {
        *self == PersistMode::Default
    }
}

impl PriorityPolicy {
    pub fn is_none(&self) -> bool {
        *self == PriorityPolicy::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for policy in [DeliverPolicy::All, DeliverPolicy::LastPerSubject, DeliverPolicy::ByStartTime] {
            let text = serde_json::to_string(&policy).unwrap();
            assert_eq!(serde_json::from_str::<DeliverPolicy>(&text).unwrap(), policy);
        }
        assert_eq!(serde_json::to_string(&RetentionPolicy::WorkQueue).unwrap(), r#""workqueue""#);
    }

    #[test]
    fn discard_is_case_insensitive_but_retention_is_not() {
        assert_eq!(DiscardPolicy::parse("NEW"), Some(DiscardPolicy::New));
        assert_eq!(RetentionPolicy::parse("Interest"), None);
        assert_eq!(DeliverPolicy::parse("undefined"), Some(DeliverPolicy::All));
    }

    #[test]
    fn unknown_value_reports_go_text() {
        let error = serde_json::from_str::<AckPolicy>(r#""sometimes""#).unwrap_err().to_string();
        assert!(error.starts_with(r#"can not unmarshal "\"sometimes\"""#), "{error}");
        let error = serde_json::from_str::<ConsumerAction>(r#""bogus""#).unwrap_err().to_string();
        assert!(error.starts_with(r#"unknown consumer action: "bogus""#), "{error}");
    }
}
