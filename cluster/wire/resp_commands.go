package wire

// keySpec says where a RESP command's keys are among its arguments. The positions follow the
// key specifications of `COMMAND INFO` (https://redis.io/docs/latest/develop/reference/key-specs/),
// simplified to the shapes that the commands below have.
type keySpec uint8

const (
	keysFirst      keySpec = iota // the first argument: GET key, SET key value ...
	keysNone                      // no key: PING, HELLO, INFO, MULTI ...
	keysAll                       // every argument: DEL key [key ...]
	keysFirstTwo                  // the first two arguments: RENAME key newkey
	keysNumkeys                   // script numkeys key [key ...] arg [arg ...]: EVAL, FCALL
	keysPairs                     // every other argument from the first: MSET key value [key value ...]
	keysAllButLast                // every argument but the last: BLPOP key [key ...] timeout
	keysSecond                    // the second argument: OBJECT ENCODING key, MEMORY USAGE key
)

// cmdInfo is what the request framer knows of a command.
type cmdInfo struct {
	name    string // upper-cased
	keys    keySpec
	control bool
}

// commands maps an upper-cased command name to what the framer knows of it. A command that is
// not here keeps its name as given (upper-cased) and takes its first argument as its key.
var commands = map[string]cmdInfo{}

// maxCmdName is the longest name in commands: a longer command is unknown.
var maxCmdName int

func init() {
	add := func(spec keySpec, control bool, names ...string) {
		for _, n := range names {
			commands[n] = cmdInfo{name: n, keys: spec, control: control}
			maxCmdName = max(maxCmdName, len(n))
		}
	}
	// Connection housekeeping: what a client library sends on its own, not a lock's command.
	add(keysNone, true, "HELLO", "AUTH", "CLIENT", "SELECT", "PING", "QUIT", "RESET",
		"READONLY", "READWRITE", "COMMAND", "ECHO")
	add(keysNone, false,
		"INFO", "WAIT", "WAITAOF", "SCRIPT", "FUNCTION", "CONFIG", "DBSIZE", "FLUSHALL",
		"FLUSHDB", "TIME", "MULTI", "EXEC", "DISCARD", "UNWATCH", "KEYS", "SCAN", "RANDOMKEY",
		"SWAPDB", "SUBSCRIBE", "UNSUBSCRIBE", "PSUBSCRIBE", "PUNSUBSCRIBE", "SSUBSCRIBE",
		"SUNSUBSCRIBE", "PUBLISH", "SPUBLISH", "PUBSUB", "SAVE", "BGSAVE", "BGREWRITEAOF",
		"LASTSAVE", "SHUTDOWN", "SLOWLOG", "LATENCY", "MONITOR", "DEBUG", "CLUSTER", "ASKING",
		"REPLICAOF", "SLAVEOF", "ROLE", "SENTINEL", "ACL", "MODULE", "LOLWUT", "SYNC", "PSYNC",
		"REPLCONF", "FAILOVER")
	add(keysAll, false, "DEL", "UNLINK", "EXISTS", "TOUCH", "WATCH", "MGET", "SINTER",
		"SUNION", "SDIFF", "SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE", "PFCOUNT", "PFMERGE")
	add(keysFirstTwo, false, "RENAME", "RENAMENX", "COPY", "SMOVE", "LMOVE", "BLMOVE",
		"RPOPLPUSH", "BRPOPLPUSH")
	add(keysNumkeys, false, "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO")
	add(keysPairs, false, "MSET", "MSETNX")
	add(keysAllButLast, false, "BLPOP", "BRPOP", "BZPOPMIN", "BZPOPMAX")
	add(keysSecond, false, "OBJECT", "MEMORY")
	// Single-key commands: listed so that their names are shared strings, not copies.
	add(keysFirst, false, "GET", "SET", "SETNX", "SETEX", "PSETEX", "GETSET", "GETDEL",
		"GETEX", "EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "EXPIRETIME", "PEXPIRETIME",
		"PERSIST", "TTL", "PTTL", "TYPE", "INCR", "DECR", "INCRBY", "DECRBY", "INCRBYFLOAT",
		"APPEND", "STRLEN", "GETRANGE", "SETRANGE", "HSET", "HGET", "HDEL", "HGETALL",
		"HINCRBY", "HEXISTS", "HMSET", "HMGET", "LPUSH", "RPUSH", "LPOP", "RPOP", "LRANGE",
		"LLEN", "SADD", "SREM", "SMEMBERS", "SISMEMBER", "SCARD", "ZADD", "ZREM", "ZRANGE",
		"ZSCORE", "ZCARD", "XADD", "XLEN", "DUMP", "RESTORE")
}

// Refused reports whether reply says that req was not done: an error reply (RESP or ZooKeeper);
// for a RESP command that is not a script, a null or the integer 0 too (SET NX's nil, SETNX's
// and PEXPIRE's :0). A script's null or 0 means what the script makes it mean — Redisson's lock
// script answers nil when it takes the lock — so of a script's replies only an error counts.
func Refused(req, reply Message) bool {
	if reply.Err {
		return true
	}
	if !reply.Null && !reply.Zero {
		return false
	}
	info, known := commands[req.Cmd]
	return !known || info.keys != keysNumkeys
}
