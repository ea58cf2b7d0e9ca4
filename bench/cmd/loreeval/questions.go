package main

import "strings"

// question is one held-out question, phrased as a user would ask it (not a
// copy of a title), with the file and section that answer it. Relevance is
// judged at file level: file names the relevant file, or several separated
// by spaces when more than one page answers the question (the section is
// in the first); the section says where the answer sits, for a reader
// checking a miss. In a paraphrase set the section is the heading that
// names the answer (the API or command), whose name the question must not
// use (see paraphrase_test.go).
type question struct {
	q, file, section string
}

// relevant reports whether f is one of the question's relevant files.
func (q question) relevant(f string) bool {
	if f == "" || q.file == "" {
		return false
	}
	for _, r := range strings.Fields(q.file) {
		if r == f {
			return true
		}
	}
	return false
}

// english questions are about nodejs-doc (Node.js API reference).
var english = []question{
	{"How can I get just the file name from a full path, without the folder?", "api/path.md", "path.basename(path[, suffix])"},
	{"What is the way to find out the extension of a filename?", "api/path.md", "path.extname(path)"},
	{"How do I glue several path segments together into one path?", "api/path.md", "path.join([...paths])"},
	{"Turn a relative path into an absolute one", "api/path.md", "path.resolve([...paths])"},
	{"How many CPUs does the machine have, and what are their speeds?", "api/os.md", "os.cpus()"},
	{"Where is the current user's home directory?", "api/os.md", "os.homedir()"},
	{"How much free memory is left on the system?", "api/os.md", "os.freemem()"},
	{"Which directory should temporary files go in?", "api/os.md", "os.tmpdir()"},
	{"How do I make a listener that fires only the first time an event happens?", "api/events.md", "emitter.once(eventName, listener)"},
	{"Why does my program crash when an emitter emits an error nobody listens to?", "api/events.md", "Error events"},
	{"How do I raise the limit on the number of listeners to stop the memory leak warning?", "api/events.md", "emitter.setMaxListeners(n)"},
	{"How can I run a shell command and get its output in a callback?", "api/child_process.md", "child_process.exec(command[, options][, callback])"},
	{"Start a new Node.js process that can exchange messages with the parent", "api/child_process.md", "child_process.fork(modulePath[, args][, options])"},
	{"How do I run an executable and block until it has finished?", "api/child_process.md", "child_process.execFileSync(file[, args][, options])"},
	{"How to stop a subprocess I started by sending it a signal?", "api/child_process.md", "subprocess.kill([signal])"},
	{"How do I compute a SHA-256 digest of some data?", "api/crypto.md", "crypto.createHash(algorithm[, options])"},
	{"Generate cryptographically strong random bytes", "api/crypto.md", "crypto.randomBytes(size[, callback])"},
	{"How to derive a key from a password with a salt using scrypt?", "api/crypto.md", "crypto.scrypt(password, salt, keylen[, options], callback)"},
	{"How do I generate a random UUID?", "api/crypto.md", "crypto.randomUUID([options])"},
	{"How do I create a web server that answers requests?", "api/http.md", "http.createServer([options][, requestListener])"},
	{"Send a GET request to a remote server and read the response", "api/http.md", "http.get(url[, options][, callback])"},
	{"How can I set a response header before sending the body?", "api/http.md", "response.setHeader(name, value)"},
	{"How do I keep connections open and reuse them for several requests?", "api/http.md", "Class: http.Agent"},
	{"Parse the query string parameters of a URL", "api/url.md", "Class: URLSearchParams"},
	{"How can I convert a file:// URL into a regular file path?", "api/url.md", "url.fileURLToPath(url)"},
	{"Print an object with nested properties for debugging", "api/util.md", "util.inspect(object[, options])"},
	{"How do I turn a callback-style function into one that returns a promise?", "api/util.md", "util.promisify(original)"},
	{"Mark a function as deprecated so callers get a warning", "api/util.md", "util.deprecate(fn, msg[, code])"},
	{"How can I ask the user a question on the terminal and read the answer?", "api/readline.md", "rl.question(query[, options], callback)"},
	{"Read a large file one line at a time", "api/readline.md", "Example: Read file stream line-by-Line"},
	{"How do I gzip a stream of data?", "api/zlib.md", "Class: zlib.Gzip"},
	{"Compress with the Brotli algorithm", "api/zlib.md", "zlib.createBrotliCompress([options])"},
	{"Run a function repeatedly every few seconds", "api/timers.md", "setInterval(callback[, delay[, ...args]])"},
	{"How do I cancel a timeout I scheduled earlier?", "api/timers.md", "clearTimeout(timeout)"},
	{"Can I await a delay instead of using a callback timer?", "api/timers.md", "timersPromises.setTimeout([delay[, value[, options]]])"},
	{"How do I read the command line arguments passed to my script?", "api/process.md", "process.argv"},
	{"Access environment variables from code", "api/process.md", "process.env"},
	{"How can I catch exceptions that nobody handled so the process does not die?", "api/process.md", "Event: 'uncaughtException'"},
	{"What happens when a promise is rejected and no handler is attached?", "api/process.md", "Event: 'unhandledRejection'"},
	{"How do I measure how much memory my process is using?", "api/process.md", "process.memoryUsage()"},
	{"How do I create a zero-filled buffer of a given size?", "api/buffer.md", "Static method: Buffer.alloc(size[, fill[, encoding]])"},
	{"Convert a string into bytes using base64 encoding", "api/buffer.md", "Buffers and character encodings"},
	{"Join a list of buffers into a single one", "api/buffer.md", "Static method: Buffer.concat(list[, totalLength])"},
	{"How do I connect streams together and get notified when everything is done or failed?", "api/stream.md", "stream.pipeline(source[, ...transforms], destination, callback)"},
	{"What does backpressure mean for writable streams?", "api/stream.md", "Buffering"},
	{"How do I implement my own readable stream?", "api/stream.md", "Implementing a readable stream"},
	{"How can I run CPU-heavy JavaScript in parallel threads?", "api/worker_threads.md", "Class: Worker"},
	{"How do I pass data to a worker thread when it starts?", "api/worker_threads.md", "worker.workerData"},
	{"How can a server use all the cores of the machine with several processes sharing a port?", "api/cluster.md", "How it works"},
	{"How do I look up the IP address of a host name?", "api/dns.md", "dns.lookup(hostname[, options], callback)"},
	{"Find the mail exchange records of a domain", "api/dns.md", "dns.resolveMx(hostname, callback)"},
	{"How do I create a TCP server that listens on a port?", "api/net.md", "net.createServer([options][, connectionListener])"},
	{"Check that two objects are deeply equal in a test", "api/assert.md", "assert.deepStrictEqual(actual, expected[, message])"},
	{"How do I assert that a function throws an error?", "api/assert.md", "assert.throws(fn[, error][, message])"},
	{"How do I read the whole contents of a file asynchronously?", "api/fs.md", "fs.readFile(path[, options], callback)"},
	{"Create a folder including any missing parent folders", "api/fs.md", "fs.mkdir(path[, options], callback)"},
	{"How can I get notified when a file changes on disk?", "api/fs.md", "fs.watch(filename[, options][, listener])"},
	{"How do I check whether a file exists or is accessible?", "api/fs.md", "fs.access(path[, mode], callback)"},
	{"How can I list the entries in a directory?", "api/fs.md", "fs.readdir(path[, options], callback)"},
	{"How do I write unit tests with the built-in test runner?", "api/test.md", "Test runner"},
	{"How do I load an ES module from CommonJS code?", "api/esm.md", "import() expressions"},
	{"What does the exports field in package.json do?", "api/packages.md", "Package entry points"},
	{"How do I start the debugger and set a breakpoint?", "api/debugger.md", "Debugger"},
	{"Which command line flag limits the old generation heap size?", "api/cli.md", "--max-old-space-size=SIZE (in megabytes)"},
	{"How can I evaluate code in a separate sandboxed context?", "api/vm.md", "vm.runInNewContext(code[, contextObject[, options]])"},
}

// chinese questions are about manpages-zh (Simplified Chinese man pages).
var chinese = []question{
	{"怎样查看磁盘分区还剩多少空间？", "man1/df.1", "描述"},
	{"如何统计一个目录占用了多少磁盘空间？", "man1/du.1", "描述"},
	{"怎么列出目录里的文件并显示详细信息？", "man1/ls.1", "描述"},
	{"如何修改文件的访问权限？", "man1/chmod.1", "描述"},
	{"怎样改变文件的所有者和所属组？", "man1/chown.1", "描述"},
	{"如何复制文件和目录？", "man1/cp.1", "描述"},
	{"怎么删除文件或者目录？", "man1/rm.1", "描述"},
	{"如何创建新的目录？", "man1/mkdir.1", "描述"},
	{"怎样在文件中搜索匹配某个模式的行？", "man1/grep.1", "描述"},
	{"如何在目录树里按名字查找文件？", "man1/find.1", "描述"},
	{"怎么打包和解包归档文件？", "man1/tar.1", "描述"},
	{"如何压缩文件以减小体积？", "man1/gzip.1", "描述"},
	{"怎样给进程发送信号来终止它？", "man1/kill.1", "描述"},
	{"如何显示或者设置系统的日期和时间？", "man1/date.1", "描述"},
	{"怎么统计文件的行数、字数和字节数？", "man1/wc.1", "描述"},
	{"如何对文本文件的行进行排序？", "man1/sort.1", "描述"},
	{"怎样查看文件的最后几行？", "man1/tail.1", "描述"},
	{"如何远程登录到另一台机器上执行命令？", "man1/ssh.1", "描述"},
	{"怎样查看系统已经运行了多长时间？", "man1/uptime.1", "描述"},
	{"如何显示当前有哪些用户登录了系统？", "man1/who.1", "描述"},
	{"怎么计算文件的 MD5 校验和？", "man1/md5sum.1", "描述"},
	{"如何创建文件之间的链接？", "man1/ln.1", "描述"},
	{"怎样测试网络上的主机是否可以连通？", "man8/ping.8", "描述"},
	{"如何查看网络连接和路由表？", "man8/netstat.8", "描述"},
	{"怎样抓取网络上的数据包进行分析？", "man8/tcpdump.8", "描述"},
}

// offTopic questions have no answer in their corpus: the right reply is to
// say the documentation does not cover them.
var offTopicEnglish = []question{
	{q: "What is the capital of France?"},
	{q: "Who won the football world cup in 1998?"},
	{q: "Give me a recipe for chocolate chip cookies"},
	{q: "How tall is Mount Everest?"},
	{q: "What is the best time of year to visit Japan?"},
	{q: "How do I file my income taxes?"},
	{q: "Which planet has the most moons?"},
	{q: "Recommend a good novel about the sea"},
	{q: "How do I train my puppy to sit?"},
	{q: "What is the boiling point of water at high altitude?"},
}

var offTopicChinese = []question{
	{q: "法国的首都是哪里？"},
	{q: "怎样做红烧肉？"},
	{q: "明天北京的天气怎么样？"},
	{q: "世界上最长的河流是哪一条？"},
	{q: "如何学好钢琴？"},
}
