/** Enrichment proposals (Atlas node type "proposal"). */
export const ID_PREFIX_PROPOSAL = "prp_";
