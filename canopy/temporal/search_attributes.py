"""The custom search attributes Canopy sets on its workflows, for list filters in the
Temporal UI and CLI (``CanopyGraphId = '…'``). The embedded server registers them at start."""

SEARCH_ATTRIBUTE_GRAPH_ID = "CanopyGraphId"
SEARCH_ATTRIBUTE_GRAPH_NAME = "CanopyGraphName"
SEARCH_ATTRIBUTE_QUEUE_ID = "CanopyQueueId"
SEARCH_ATTRIBUTES: dict[str, str] = {
    SEARCH_ATTRIBUTE_GRAPH_ID: "Keyword",
    SEARCH_ATTRIBUTE_GRAPH_NAME: "Keyword",
    SEARCH_ATTRIBUTE_QUEUE_ID: "Keyword",
}
"""Each attribute's Temporal type, as registered on the server."""
