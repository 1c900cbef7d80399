//! What the messenger knows of message types, given by its user: the
//! names its per-type counters show (Messenger::traffic_by_type, `messenger
//! dump`) and which request types [`crate::Connection::call`] pairs with
//! which reply types. The runtime itself does not depend on any message
//! type; Ceph's tables are msgr-messages' (`MESSAGE_TYPES`, `REPLY_TYPES`),
//! which the `msgr` facade and the programs built on it hand to
//! [`crate::Options`].

/// Message type names and request/reply pairs (Options::message_types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageTypes {
    names: &'static [(u16, &'static str)],
    replies: &'static [(u16, u16)],
}

impl MessageTypes {
    /// No names (all traffic is counted as `other`) and no replies
    /// (`Connection::call` refuses every type): the default.
    pub const NONE: MessageTypes = MessageTypes {
        names: &[],
        replies: &[],
    };

    /// `names`: each type's name, sorted by type, as `(type, name)`;
    /// `replies`: `(request type, reply type)` for the requests
    /// `Connection::call` may send.
    pub const fn new(
        names: &'static [(u16, &'static str)],
        replies: &'static [(u16, u16)],
    ) -> MessageTypes {
        MessageTypes { names, replies }
    }

    /// The named types, as given.
    pub fn names(&self) -> &'static [(u16, &'static str)] {
        self.names
    }

    /// The name of `msg_type`, if it was given one.
    pub fn name(&self, msg_type: u16) -> Option<&'static str> {
        self.names
            .iter()
            .find(|&&(t, _)| t == msg_type)
            .map(|&(_, n)| n)
    }

    /// The type of the reply to a request of `request` type, if it has one.
    pub fn reply_type(&self, request: u16) -> Option<u16> {
        self.replies
            .iter()
            .find(|&&(q, _)| q == request)
            .map(|&(_, r)| r)
    }
}

impl Default for MessageTypes {
    fn default() -> MessageTypes {
        MessageTypes::NONE
    }
}

#[cfg(test)]
mod tests {
    use super::MessageTypes;

    #[test]
    fn names_and_replies_are_what_was_given() {
        const T: MessageTypes = MessageTypes::new(
            &[(42, "CEPH_MSG_OSD_OP"), (43, "CEPH_MSG_OSD_OPREPLY")],
            &[(42, 43)],
        );
        assert_eq!(T.name(42), Some("CEPH_MSG_OSD_OP"));
        assert_eq!(T.name(44), None);
        assert_eq!(T.reply_type(42), Some(43));
        assert_eq!(T.reply_type(43), None);
        assert_eq!(MessageTypes::NONE.reply_type(42), None);
    }
}
