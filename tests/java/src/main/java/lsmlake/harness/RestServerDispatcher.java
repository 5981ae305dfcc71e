package lsmlake.harness;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;

import okhttp3.mockwebserver.Dispatcher;
import okhttp3.mockwebserver.MockResponse;
import okhttp3.mockwebserver.MockWebServer;
import okhttp3.mockwebserver.RecordedRequest;

import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.catalog.TableMetadata;
import org.apache.paimon.rest.RESTApi;
import org.apache.paimon.rest.RESTCatalogServer;
import org.apache.paimon.rest.ResourcePaths;
import org.apache.paimon.rest.requests.RenameTableRequest;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.TableSchema;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Sits in front of RESTCatalogServer's own dispatcher: records every request (method, path, body) for
 * the "requests" command, and (unless switched off) works around three bugs of Paimon 1.4.2's server
 * (still in its later versions) that mislead every client, Java's RESTCatalog included:
 *
 * <ul>
 *   <li>a rename moves the table's directory but keeps the old path in the server's record, so
 *       clients then read (as empty) and commit at a path that no longer exists. After a rename the
 *       server answers 200 for, the record of the new name gets the path the server gives a table of
 *       that name (its own createTableMetadata), and the latest-snapshot record moves with it;
 *   <li>a new branch's latest-snapshot record is a copy of the main table's, whatever the branch
 *       holds (an empty branch, or one from an older tag), and clients take the latest snapshot from
 *       that record: they read main's data in the branch and commit on top of it. After a branch is
 *       created, its record becomes the branch's own latest snapshot (none for an empty branch);
 *   <li>its stores are plain HashMaps updated without a lock, so concurrent commits can throw
 *       ConcurrentModificationException after the snapshot file was written, and MockWebServer then
 *       drops the connection without an answer (the client sees a commit of unknown outcome). Requests
 *       are handled one at a time.
 * </ul>
 *
 * Nothing else of the server's answers is changed.
 */
final class RestServerDispatcher extends Dispatcher {

    private final RESTCatalogServer server;
    private final Dispatcher inner;
    private final String renamePath;
    private final boolean fixes;
    private final List<JsonObject> requests = new ArrayList<>();

    private RestServerDispatcher(
            RESTCatalogServer server, Dispatcher inner, String prefix, boolean fixes) {
        this.server = server;
        this.inner = inner;
        this.renamePath = new ResourcePaths(prefix).renameTable();
        this.fixes = fixes;
    }

    /** Installs the wrapper as the dispatcher of the server's MockWebServer. */
    static RestServerDispatcher install(
            RESTCatalogServer server, Dispatcher inner, String prefix, boolean fixes)
            throws Exception {
        RestServerDispatcher wrapper = new RestServerDispatcher(server, inner, prefix, fixes);
        MockWebServer web = (MockWebServer) field("server").get(server);
        web.setDispatcher(wrapper);
        return wrapper;
    }

    @Override
    public MockResponse dispatch(RecordedRequest request) throws InterruptedException {
        String body = request.getBody().clone().readUtf8();
        JsonObject one = new JsonObject();
        one.addProperty("method", request.getMethod());
        one.addProperty("path", request.getPath());
        one.addProperty("body", body);
        synchronized (requests) {
            requests.add(one);
        }
        if (fixes) {
            synchronized (server) { // the server's stores are plain HashMaps: one request at a time
                return handle(request, body);
            }
        }
        return handle(request, body);
    }

    private MockResponse handle(RecordedRequest request, String body) throws InterruptedException {
        MockResponse response = inner.dispatch(request);
        if (fixes
                && "POST".equals(request.getMethod())
                && request.getPath() != null
                && request.getPath().endsWith("/branches")
                && response.getStatus().contains(" 200")) {
            try {
                fixNewBranch(request.getPath(), body);
            } catch (Exception e) {
                return new MockResponse()
                        .setResponseCode(500)
                        .setBody("harness: fixing the new branch's record failed: " + e);
            }
        }
        if (fixes
                && "POST".equals(request.getMethod())
                && renamePath.equals(request.getPath())
                && response.getStatus().contains(" 200")) {
            try {
                fixRenamed(RESTApi.fromJson(body, RenameTableRequest.class));
            } catch (Exception e) {
                return new MockResponse()
                        .setResponseCode(500)
                        .setBody("harness: fixing the renamed table's record failed: " + e);
            }
        }
        return response;
    }

    JsonArray requests() {
        JsonArray all = new JsonArray();
        synchronized (requests) {
            requests.forEach(all::add);
        }
        return all;
    }

    @SuppressWarnings("unchecked")
    private void fixRenamed(RenameTableRequest rename) throws Exception {
        Identifier to = rename.getDestination();
        Map<String, TableMetadata> store =
                (Map<String, TableMetadata>) field("tableMetadataStore").get(server);
        TableMetadata kept = store.get(to.getFullName());
        if (kept == null || kept.isExternal()) {
            return; // an external table's path is its own: the server rightly keeps it
        }
        Method create =
                RESTCatalogServer.class.getDeclaredMethod(
                        "createTableMetadata",
                        Identifier.class,
                        long.class,
                        Schema.class,
                        String.class,
                        boolean.class);
        create.setAccessible(true);
        TableSchema schema = kept.schema();
        TableMetadata fresh =
                (TableMetadata)
                        create.invoke(server, to, schema.id(), schema.toSchema(), kept.uuid(), false);
        Map<String, String> options = new HashMap<>(schema.options());
        options.put("path", fresh.schema().options().get("path"));
        store.put(to.getFullName(), new TableMetadata(schema.copy(options), false, kept.uuid()));
        Map<String, Object> latest = (Map<String, Object>) field("tableLatestSnapshotStore").get(server);
        Object snapshot = latest.remove(rename.getSource().getFullName());
        if (snapshot != null) {
            latest.put(to.getFullName(), snapshot);
        }
    }

    @SuppressWarnings("unchecked")
    private void fixNewBranch(String path, String body) throws Exception {
        String[] parts = path.split("/"); // ... databases, db, tables, t, branches
        int at = java.util.Arrays.asList(parts).lastIndexOf("databases");
        Identifier branch =
                new Identifier(
                        org.apache.paimon.rest.RESTUtil.decodeString(parts[at + 1]),
                        Identifier.create(
                                        parts[at + 1],
                                        org.apache.paimon.rest.RESTUtil.decodeString(parts[at + 3]))
                                .getTableName(), // the table, when a branch makes the branch
                        RESTApi.fromJson(body, org.apache.paimon.rest.requests.CreateBranchRequest.class)
                                .branch());
        org.apache.paimon.catalog.Catalog catalog =
                (org.apache.paimon.catalog.Catalog) field("catalog").get(server);
        org.apache.paimon.Snapshot latest =
                ((org.apache.paimon.table.FileStoreTable) catalog.getTable(branch))
                        .snapshotManager()
                        .latestSnapshot();
        Map<String, Object> records = (Map<String, Object>) field("tableLatestSnapshotStore").get(server);
        if (latest == null) {
            records.remove(branch.getFullName());
        } else {
            long rows = latest.totalRecordCount();
            records.put(
                    branch.getFullName(),
                    new org.apache.paimon.table.TableSnapshot(latest, rows, 0, 0, 0));
        }
    }

    private static Field field(String name) throws NoSuchFieldException {
        Field f = RESTCatalogServer.class.getDeclaredField(name);
        f.setAccessible(true);
        return f;
    }
}
