// The stopwords compile ranking leaves out of its query and the local embedder leaves out of a text.

/**
 * English function words and question words. They say how a question is asked, not what it is
 * about, and they match most claims, so compile ranking leaves them out of its query (all of them
 * are kept when a query has nothing else). Fixed list: ranking stays deterministic.
 */
export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    "a about above after again against all also am an and any are as at be because been before being below between " +
    "both but by can could d did do does doing done down during each either else ever every few for from further " +
    "get gets got had has have having he her here hers herself him himself his how i if in into is it its itself just " +
    "ll m me might more most must my myself no nor not now of off on once only or other our ours ourselves out over own " +
    "re s same shall she should so some such t than that the their theirs them themselves then there these they this " +
    "those through to too under until up upon us ve very was we were what whatever when where whether which while who " +
    "whom whose why will with would yet you your yours yourself yourselves"
  ).split(" "),
);
