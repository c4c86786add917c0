// lockchaos process client: Apache Curator's InterProcessMutex, used as its documentation says.
//
// https://curator.apache.org/docs/recipes-shared-reentrant-lock — acquire(time, unit), release(),
// isAcquiredInThisProcess(); "Error Handling: it is strongly recommended that you add a
// ConnectionStateListener and watch for SUSPENDED and LOST state changes. If a SUSPENDED state is
// reported you cannot be certain that you still hold the lock unless you subsequently receive a
// RECONNECTED state. If a LOST state is reported it is certain that you no longer hold the lock."
// Protocol: docs/process-clients.md (JSON lines; this file parses the few fields it needs).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorLock {
    static volatile ConnectionState state = ConnectionState.CONNECTED;
    static volatile InterProcessMutex lock;

    static synchronized void send(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String str(String line, String key) {
        Matcher m = Pattern.compile("\"" + key + "\":\"([^\"]*)\"").matcher(line);
        return m.find() ? m.group(1) : "";
    }

    static long num(String line, String key) {
        Matcher m = Pattern.compile("\"" + key + "\":(-?\\d+)").matcher(line);
        return m.find() ? Long.parseLong(m.group(1)) : 0;
    }

    static String nodes(String line) {
        Matcher m = Pattern.compile("\"nodes\":\\[([^\\]]*)\\]").matcher(line);
        return m.find() ? m.group(1).replace("\"", "") : "";
    }

    static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        CuratorFramework client = null;
        String line;
        while ((line = in.readLine()) != null) {
            long id = num(line, "id");
            String type = str(line, "type");
            String re = "{\"in_reply_to\":" + id + ",";
            try {
                switch (type) {
                case "init":
                    int session = (int) num(line, "session_timeout_ms");
                    client = CuratorFrameworkFactory.newClient(nodes(line), session, session,
                            new ExponentialBackoffRetry(100, 3));
                    if (System.getenv("LOCKCHAOS_CURATOR_NO_LISTENER") == null)
                    client.getConnectionStateListenable().addListener((c, newState) -> {
                        state = newState;
                        if (newState == ConnectionState.LOST && lock != null && lock.isAcquiredInThisProcess()) {
                            send("{\"type\":\"lost\",\"text\":\"ConnectionState.LOST\"}");
                        }
                    });
                    client.start();
                    client.blockUntilConnected(20, TimeUnit.SECONDS);
                    // Warm up (class loading, JIT) on a lock of this client's own, so the first
                    // real acquire is not a second slower than the rest.
                    InterProcessMutex warm = new InterProcessMutex(client, "/lockchaos-warmup/" + num(line, "client"));
                    for (int i = 0; i < 3; i++) {
                        warm.acquire();
                        warm.release();
                    }
                    lock = new InterProcessMutex(client, "/lockchaos-curator/" + str(line, "lock"));
                    send(re + "\"type\":\"init_ok\",\"name\":\"Apache Curator InterProcessMutex\"}");
                    break;
                case "acquire":
                    if (lock.acquire(num(line, "timeout_ms"), TimeUnit.MILLISECONDS)) {
                        // The lease is the session: the timeout the server granted.
                        int granted = client.getZookeeperClient().getZooKeeper().getSessionTimeout();
                        send(re + "\"type\":\"ok\",\"validity_ms\":0,\"ttl_ms\":" + granted + "}");
                    } else {
                        send(re + "\"type\":\"fail\",\"code\":\"timeout_definite\"}");
                    }
                    break;
                case "valid":
                    boolean held = lock.isAcquiredInThisProcess()
                            && (state == ConnectionState.CONNECTED || state == ConnectionState.RECONNECTED);
                    send(re + "\"type\":\"ok\",\"held\":" + held + "}");
                    break;
                case "release":
                    lock.release();
                    send(re + "\"type\":\"ok\"}");
                    break;
                default:
                    send(re + "\"type\":\"fail\",\"code\":\"refused\",\"text\":" + quote("unknown type " + type) + "}");
                }
            } catch (IllegalMonitorStateException e) {
                send(re + "\"type\":\"fail\",\"code\":\"not_held\",\"text\":" + quote(e.toString()) + "}");
            } catch (Exception e) {
                if (type.equals("valid")) {
                    send(re + "\"type\":\"ok\",\"held\":false}");
                } else {
                    send(re + "\"type\":\"info\",\"code\":\"connection_lost\",\"text\":" + quote(e.toString()) + "}");
                }
            }
        }
        if (client != null) {
            client.close();
        }
    }
}
