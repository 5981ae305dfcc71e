package lsmlake.harness;

import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.rest.RESTCatalogServer;
import org.apache.paimon.rest.RESTToken;
import org.apache.paimon.rest.auth.AuthProvider;
import org.apache.paimon.rest.auth.BearTokenAuthProvider;
import org.apache.paimon.rest.responses.ConfigResponse;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * Runs Paimon's own REST catalog server (RESTCatalogServer from the paimon-core tests jar, on okhttp's
 * MockWebServer) on loopback, a free port, for the tests. Argument: one JSON object with "data_path" (the
 * warehouse directory the server keeps tables in), "warehouse" (the catalog name clients ask /v1/config
 * for), "token" (the bearer token it accepts), or "dlf" (an object with "access_key_id",
 * "access_key_secret", optional "security_token", "region": the server then accepts only requests DLF-
 * signed with that key, checked by DlfCheckingAuth), "defaults" and "overrides" (its config answer),
 * "server_fixes" (default true: RestServerDispatcher's workarounds of the server's bugs). Prints
 * {"url": ...} once listening; then each line on stdin is a command, answered by one line of JSON:
 * "headers" (the headers of every request received so far, names lower-cased as the server records
 * them), "requests" (every request so far: method, path, body), "deny-database NAME" and "deny-table
 * DB.TABLE" (the server answers 403 for them from then on), "data-token DB.TABLE EXPIRE_MILLIS JSON"
 * (the data token the server serves for the table from then on: JSON is its map of options). It stops
 * when its stdin closes.
 */
public final class RestServer {

    private RestServer() {}

    public static void main(String[] args) throws Exception {
        JsonObject spec = JsonParser.parseString(args[0]).getAsJsonObject();
        String warehouse = spec.get("warehouse").getAsString();
        Map<String, String> defaults = strings(spec, "defaults");
        defaults.putIfAbsent("warehouse", warehouse);
        ConfigResponse config = new ConfigResponse(defaults, strings(spec, "overrides"));
        AuthProvider auth = auth(spec);
        RESTCatalogServer server =
                new RESTCatalogServer(spec.get("data_path").getAsString(), auth, config, warehouse);
        boolean fixes = !spec.has("server_fixes") || spec.get("server_fixes").getAsBoolean();
        RestServerDispatcher dispatcher =
                RestServerDispatcher.install(
                        server, server.initDispatcher(auth), defaults.get("prefix"), fixes);
        server.start();
        JsonObject out = new JsonObject();
        out.addProperty("url", server.getUrl());
        System.out.println(new Gson().toJson(out));
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.trim().split(" ");
            if (words.length >= 4 && words[0].equals("data-token")) {
                String json = line.trim().split(" ", 4)[3];
                server.setDataToken(
                        Identifier.fromString(words[1]),
                        new RESTToken(
                                strings(JsonParser.parseString("{\"t\":" + json + "}").getAsJsonObject(), "t"),
                                Long.parseLong(words[2])));
                System.out.println("{}");
                System.out.flush();
            } else if (line.trim().equals("requests")) {
                System.out.println(new Gson().toJson(dispatcher.requests()));
                System.out.flush();
            } else if (words.length == 2 && words[0].equals("deny-database")) {
                server.addNoPermissionDatabase(words[1]);
                System.out.println("{}");
                System.out.flush();
            } else if (words.length == 2 && words[0].equals("deny-table")) {
                server.addNoPermissionTable(Identifier.fromString(words[1]));
                System.out.println("{}");
                System.out.flush();
            } else if (line.trim().equals("headers")) {
                JsonArray all = new JsonArray();
                for (Map<String, String> headers : server.getReceivedHeaders()) {
                    JsonObject one = new JsonObject();
                    headers.forEach(one::addProperty);
                    all.add(one);
                }
                System.out.println(new Gson().toJson(all));
                System.out.flush();
            }
        }
        server.shutdown();
    }

    private static AuthProvider auth(JsonObject spec) {
        if (!spec.has("dlf")) {
            return new BearTokenAuthProvider(spec.get("token").getAsString());
        }
        JsonObject dlf = spec.getAsJsonObject("dlf");
        return new DlfCheckingAuth(
                dlf.get("access_key_id").getAsString(),
                dlf.get("access_key_secret").getAsString(),
                dlf.has("security_token") ? dlf.get("security_token").getAsString() : null,
                dlf.get("region").getAsString());
    }

    private static Map<String, String> strings(JsonObject spec, String key) {
        Map<String, String> out = new HashMap<>();
        if (spec.has(key)) {
            for (Map.Entry<String, JsonElement> e : spec.getAsJsonObject(key).entrySet()) {
                out.put(e.getKey(), e.getValue().getAsString());
            }
        }
        return out;
    }
}
