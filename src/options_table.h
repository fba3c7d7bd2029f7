/* The one table of comex options. Each row: identifier, name, type, default,
 * unit, the commands it applies to, doc. The name is the --flag, the config
 * file key, and (upper-cased, '-' -> '_', prefixed COMEX_) the environment
 * variable. docs/OPTIONS.md and every --help are generated from it. */
/*   id                 name                  type      default            unit        scope            doc */
OPT(CONFIG,            "config",             OPT_STR,  "",                "path",     SC_ALL,          "config file of 'name = value' lines read before the environment and the command line")
OPT(LOG_LEVEL,         "log-level",          OPT_UINT, "2",               "0-3",      SC_ALL,          "0 errors, 1 warnings, 2 info, 3 debug")
OPT(TOKEN_FILE,        "token-file",         OPT_STR,  "",                "path",     SC_MEMNODE|SC_CLIENT, "file (mode 0600) holding the shared cluster secret; create one with 'comex token FILE'")
OPT(LISTEN,            "listen",             OPT_STR,  "127.0.0.1:7300",  "HOST:PORT", SC_MEMNODE,     "address the memnode accepts clients on")
OPT(POOL,              "pool",               OPT_SIZE, "1G",              "bytes",    SC_MEMNODE,      "memory the memnode contributes; allocated, populated and locked at start")
OPT(NID,               "nid",                OPT_UINT, "0",               "0-65535",  SC_MEMNODE,      "this memnode's 16-bit node id reported to clients; 0 derives one from the listen port")
OPT(ALLOW_NO_TOKEN,    "allow-no-token",     OPT_BOOL, "false",           "bool",     SC_MEMNODE,      "serve without authentication; refused unless listening on a loopback address")
OPT(HUGEPAGES,         "hugepages",          OPT_BOOL, "true",            "bool",     SC_MEMNODE,      "back the pool with 2 MiB pages (hugetlbfs if reserved, else transparent huge pages)")
OPT(MLOCK,             "mlock",              OPT_BOOL, "true",            "bool",     SC_MEMNODE,      "lock the pool in RAM; a failure is a warning, not fatal")
OPT(IDLE_SPIN,         "idle-spin",          OPT_DURATION, "200us",       "duration", SC_MEMNODE,      "busy-poll this long after the last request before sleeping on the event fd; 0 always sleeps")
OPT(DATA_PATH,         "data-path",          OPT_STR,  "validated",       "validated|rma", SC_MEMNODE,   "validated: pages move in READ/WRITE messages checked against each client's frames; rma: clients get the pool's key for one-sided get/put (trusted clients only: software RMA over TCP checks no address)")
OPT(MAX_CLIENTS,       "max-clients",        OPT_UINT, "64",              "count",    SC_MEMNODE,      "connections served at once; more are refused")
OPT(CREDITS,           "credits",            OPT_UINT, "16",              "requests", SC_MEMNODE,      "control requests a client may have outstanding (HPBD-style flow control)")
OPT(MEMNODE,           "memnode",            OPT_LIST, "127.0.0.1:7300",  "HOST:PORT,...", SC_CLIENT,  "memnodes to use, in node-number order; repeat the flag or separate with commas")
OPT(REPLENISH_THRESHOLD, "replenish-threshold", OPT_UINT_AUTO, "1024",    "frames",   SC_CLIENT,       "T: ask a memnode for frames when our pool for it drops below this; 'auto' derives it from measured RTT and consumption (COMEX Eq. 1)")
OPT(REPLENISH_ORDER,   "replenish-order",    OPT_UINT, "10",              "0-10",     SC_CLIENT,       "each replenish asks for one chunk of 2^order frames")
OPT(RELEASE_BATCH,     "release-batch",      OPT_UINT, "512",             "frames",   SC_CLIENT,       "frames queued before one FREE message releases them")
OPT(OP_TIMEOUT,        "op-timeout",         OPT_DURATION, "5s",          "duration", SC_CLIENT,       "a memnode that has not answered or completed a transfer by then is declared failed")
OPT(CLIENT_SPIN,       "client-spin",        OPT_DURATION, "100us",       "duration", SC_CLIENT,       "busy-poll this long for a reply or a transfer before sleeping on the event fd")
