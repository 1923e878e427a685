//! The stored states of long-lived objects (broadcasts, automations and their runs, contact
//! imports, domain claims), each the closed set its table's `CHECK` constraint allows. Rows
//! read them as these enums, so a state a handler or job compares against is checked by the
//! compiler, not by a string that could be misspelt.

text_enum! {
    /// A broadcast's state.
    BroadcastStatus {
        /// Editable; not sent.
        Draft = "draft",
        /// Waiting for its `scheduled_at`.
        Scheduled = "scheduled",
        /// Sent; its pages are being resolved.
        Queued = "queued",
        /// Its recipients' emails are being made.
        Sending = "sending",
        /// Every recipient has its email (or its exclusion).
        Sent = "sent",
        /// Stopped before it finished.
        Canceled = "canceled",
        /// Could not be sent (`failed_reason` says why).
        Failed = "failed",
    }
}

impl BroadcastStatus {
    /// Whether the broadcast has been sent and has not ended: a cancel applies, a page job goes on.
    pub fn is_in_flight(self) -> bool {
        matches!(self, BroadcastStatus::Scheduled | BroadcastStatus::Queued | BroadcastStatus::Sending)
    }
}

text_enum! {
    /// Whether an automation starts new runs.
    AutomationStatus {
        /// New runs start on its trigger.
        Enabled = "enabled",
        /// No new run starts; runs under way finish.
        Disabled = "disabled",
    }
}

text_enum! {
    /// The state of one contact's run through an automation.
    RunStatus {
        /// Due at its `due_at`, at its current step.
        Running = "running",
        /// Reached an end of the graph.
        Completed = "completed",
        /// A step failed after its attempts.
        Failed = "failed",
        /// Stopped by the automation's stop rules or by a person.
        Cancelled = "cancelled",
    }
}

text_enum! {
    /// A contact import's state.
    ImportStatus {
        /// Accepted; its job has not started.
        Queued = "queued",
        /// Rows are being read.
        InProgress = "in_progress",
        /// Every row was read.
        Completed = "completed",
        /// The file could not be read.
        Failed = "failed",
    }
}

impl ImportStatus {
    /// Whether the import has ended (its job does nothing more).
    pub fn is_finished(self) -> bool {
        matches!(self, ImportStatus::Completed | ImportStatus::Failed)
    }
}

text_enum! {
    /// A claim on a domain another team holds.
    ClaimStatus {
        /// Waiting for its TXT record.
        Pending = "pending",
        /// The domain moved to the claiming team.
        Completed = "completed",
        /// Ran out before the record was found.
        Expired = "expired",
    }
}
