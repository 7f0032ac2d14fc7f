"""The backlog: the spec body format and the ordering rules of queues."""
