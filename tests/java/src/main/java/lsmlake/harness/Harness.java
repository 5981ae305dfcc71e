package lsmlake.harness;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.RowPartitionKeyExtractor;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.StreamTableScan;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Drives Java Paimon from a JSON-lines command stream on stdin and answers one JSON line per command
 * on stdout (Paimon's own logging goes to stderr).
 *
 * <p>Every command carries "warehouse" and "table" ("db.name"); the answer is {"ok": true, ...} or
 * {"ok": false, "error": ..., "trace": ...}. Values cross as JSON: strings, numbers, booleans; DECIMAL
 * as its plain string; DATE as ISO "yyyy-mm-dd"; TIMESTAMP / TIMESTAMP_LTZ as epoch microseconds;
 * BYTES as base64. Row kinds are "+I", "-U", "+U", "-D" under the key "_kind".
 */
public final class Harness {

    private static final Gson GSON = new GsonBuilder().serializeNulls().disableHtmlEscaping().create();
    private final Map<String, Catalog> catalogs = new HashMap<>();
    // Lookup compaction (deletion vectors, lookup changelog, first-row) spills to a temp disk directory.
    private final IOManager ioManager;

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        // Anything Paimon or Hadoop prints must not corrupt the answer stream.
        System.setOut(System.err);
        Harness harness = new Harness();
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonObject answer;
            try {
                JsonObject command = JsonParser.parseString(line).getAsJsonObject();
                if ("quit".equals(command.get("op").getAsString())) {
                    break;
                }
                answer = harness.handle(command);
                answer.addProperty("ok", true);
            } catch (Throwable t) {
                answer = new JsonObject();
                answer.addProperty("ok", false);
                answer.addProperty("error", t.toString());
                StringWriter trace = new StringWriter();
                t.printStackTrace(new PrintWriter(trace));
                answer.addProperty("trace", trace.toString());
            }
            out.println(GSON.toJson(answer));
        }
        for (Catalog catalog : harness.catalogs.values()) {
            catalog.close();
        }
        harness.ioManager.close();
    }

    private JsonObject handle(JsonObject command) throws Exception {
        String op = command.get("op").getAsString();
        switch (op) {
            case "ping":
                JsonObject pong = new JsonObject();
                pong.addProperty("paimon_version", paimonVersion());
                return pong;
            case "create":
                return create(command);
            case "read":
                return read(command);
            case "write":
                return write(command);
            case "compact":
                return compact(command);
            case "files":
                return systemTable(command, "files");
            case "system":
                return systemTable(command, command.get("name").getAsString());
            case "stream":
                return stream(command);
            case "alter":
                return alter(command);
            case "tag":
                return tag(command);
            case "branch":
                return branch(command);
            case "expire":
                return expire(command);
            case "rollback":
                return rollback(command);
            case "snapshots":
                return snapshots(command);
            case "read_where":
                return readWhere(command);
            case "index_eval":
                return indexEval(command);
            case "postpone_batch_write":
                // Flink's fixed-bucket batch write of a postpone table: PostponeBatchWrite.java
                return postponeBatchWrite(command);
            case "lifecycle":
                // table-lifecycle procedures' core logic: Lifecycle.java
                return Lifecycle.run(
                        catalog(command), (FileStoreTable) table(command, ""), command, ioManager);
            default:
                throw new IllegalArgumentException("unknown op: " + op);
        }
    }

    private static String paimonVersion() {
        Package p = Catalog.class.getPackage();
        String v = p == null ? null : p.getImplementationVersion();
        return v == null ? "unknown" : v;
    }

    private Catalog catalog(JsonObject command) {
        String warehouse = command.get("warehouse").getAsString();
        return catalogs.computeIfAbsent(
                warehouse,
                w -> {
                    Options options = new Options();
                    options.set("warehouse", w);
                    // lsmlake commits between commands: never serve a cached table or snapshot.
                    options.set("cache-enabled", "false");
                    return CatalogFactory.createCatalog(CatalogContext.create(options));
                });
    }

    private Table table(JsonObject command, String suffix) throws Exception {
        Identifier id = Identifier.fromString(command.get("table").getAsString() + suffix);
        Table table = catalog(command).getTable(id);
        Map<String, String> dynamic = new HashMap<>();
        if (command.has("snapshot") && !command.get("snapshot").isJsonNull()) {
            dynamic.put("scan.snapshot-id", command.get("snapshot").getAsString());
        }
        if (command.has("options")) {
            for (Map.Entry<String, JsonElement> e : command.getAsJsonObject("options").entrySet()) {
                dynamic.put(e.getKey(), e.getValue().getAsString());
            }
        }
        return dynamic.isEmpty() ? table : table.copy(dynamic);
    }

    // ---- commands ----

    private JsonObject create(JsonObject command) throws Exception {
        Catalog catalog = catalog(command);
        Identifier id = Identifier.fromString(command.get("table").getAsString());
        catalog.createDatabase(id.getDatabaseName(), true);
        Schema.Builder schema = Schema.newBuilder();
        for (JsonElement f : command.getAsJsonArray("fields")) {
            JsonArray pair = f.getAsJsonArray();
            schema.column(
                    pair.get(0).getAsString(),
                    DataTypeJsonParser.parseAtomicTypeSQLString(pair.get(1).getAsString()));
        }
        schema.primaryKey(strings(command, "primary_key"));
        schema.partitionKeys(strings(command, "partition_keys"));
        if (command.has("options")) {
            for (Map.Entry<String, JsonElement> e : command.getAsJsonObject("options").entrySet()) {
                schema.option(e.getKey(), e.getValue().getAsString());
            }
        }
        catalog.createTable(id, schema.build(), false);
        return new JsonObject();
    }

    private JsonObject read(JsonObject command) throws Exception {
        Table table = table(command, "");
        if (command.has("equal") && !command.get("equal").isJsonNull()) {
            // ["column", "string value"]: a string equality filter (file indexes may skip files)
            JsonArray eq = command.getAsJsonArray("equal");
            PredicateBuilder pb = new PredicateBuilder(table.rowType());
            Predicate p =
                    pb.equal(pb.indexOf(eq.get(0).getAsString()), BinaryString.fromString(eq.get(1).getAsString()));
            return readAll(table, p);
        }
        return readAll(table, null);
    }

    /** Rows Java reads with a ["column", op, literal...] filter (file indexes may skip files and rows). */
    private JsonObject readWhere(JsonObject command) throws Exception {
        Table table = table(command, "");
        return readAll(table, FileIndexCheck.predicate(table.rowType(), command.getAsJsonArray("where")));
    }

    private JsonObject indexEval(JsonObject command) throws Exception {
        FileStoreTable table = (FileStoreTable) table(command, "");
        return FileIndexCheck.evaluate(
                table, FileIndexCheck.predicate(table.rowType(), command.getAsJsonArray("where")));
    }

    private JsonObject systemTable(JsonObject command, String name) throws Exception {
        return readAll(table(command, "$" + name), null);
    }

    private static JsonObject readAll(Table table, Predicate filter) throws Exception {
        ReadBuilder builder = table.newReadBuilder();
        if (filter != null) {
            builder.withFilter(filter);
        }
        RowType type = builder.readType();
        List<Split> splits = builder.newScan().plan().splits();
        int files = 0;
        for (Split s : splits) {
            files += s instanceof DataSplit ? ((DataSplit) s).dataFiles().size() : 0;
        }
        JsonArray rows = new JsonArray();
        try (RecordReader<InternalRow> reader = builder.newRead().createReader(splits)) {
            reader.forEachRemaining(
                    row -> {
                        JsonObject json = rowJson(row, type);
                        json.addProperty("_kind", row.getRowKind().shortString());
                        rows.add(json);
                    });
        }
        JsonObject answer = new JsonObject();
        answer.add("rows", rows);
        answer.addProperty("files", files);
        JsonArray names = new JsonArray();
        for (DataField f : type.getFields()) {
            names.add(f.name());
        }
        answer.add("fields", names);
        return answer;
    }

    private JsonObject write(JsonObject command) throws Exception {
        Table table = table(command, "");
        RowType type = table.rowType();
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        if (command.has("overwrite") && command.get("overwrite").getAsBoolean()) {
            builder = builder.withOverwrite(); // INSERT OVERWRITE of the partitions the rows hold
        }
        FileStoreTable store = (FileStoreTable) table;
        // bucket = -1: Java's own API leaves bucket assignment to the caller (DynamicBucketRowKeyExtractor
        // refuses write(row)); HashBucketAssigner over the table's HASH index is what Flink's assigner runs.
        boolean dynamic = store.coreOptions().bucket() == -1;
        HashBucketAssigner assigner =
                dynamic
                        ? new HashBucketAssigner(
                                store.snapshotManager(),
                                UUID.randomUUID().toString(),
                                store.store().newIndexFileHandler(),
                                1,
                                1,
                                0,
                                store.coreOptions().dynamicBucketTargetRowNum(),
                                store.coreOptions().dynamicBucketMaxBuckets())
                        : null;
        RowPartitionKeyExtractor extractor =
                dynamic ? new RowPartitionKeyExtractor(store.schema()) : null;
        try (BatchTableWrite write = (BatchTableWrite) builder.newWrite().withIOManager(ioManager);
                BatchTableCommit commit = builder.newCommit()) {
            for (JsonElement e : command.getAsJsonArray("rows")) {
                GenericRow row = rowFromJson(e.getAsJsonObject(), type);
                if (dynamic) {
                    int hash = extractor.trimmedPrimaryKey(row).hashCode();
                    write.write(row, assigner.assign(extractor.partition(row), hash));
                } else {
                    write.write(row);
                }
            }
            commit.commit(write.prepareCommit());
        }
        return latest(table);
    }

    /** One table row from a JSON object: its fields by name, its row kind from "_kind" (default +I). */
    private static GenericRow rowFromJson(JsonObject json, RowType type) {
        RowKind kind =
                json.has("_kind")
                        ? RowKind.fromShortString(json.get("_kind").getAsString())
                        : RowKind.INSERT;
        GenericRow row = new GenericRow(kind, type.getFieldCount());
        for (int i = 0; i < type.getFieldCount(); i++) {
            DataField field = type.getFields().get(i);
            row.setField(i, fromJson(json.get(field.name()), field.type()));
        }
        return row;
    }

    private JsonObject postponeBatchWrite(JsonObject command) throws Exception {
        FileStoreTable table = (FileStoreTable) table(command, "");
        RowType type = table.rowType();
        List<InternalRow> rows = new ArrayList<>();
        for (JsonElement e : command.getAsJsonArray("rows")) {
            GenericRow row = rowFromJson(e.getAsJsonObject(), type);
            rows.add(row);
        }
        PostponeBatchWrite.run(table, rows, command.get("parallelism").getAsInt(), ioManager);
        return latest(table);
    }

    private JsonObject compact(JsonObject command) throws Exception {
        Table table = table(command, "");
        // full = false: each bucket's compaction strategy decides (it may pick nothing).
        boolean full = !command.has("full") || command.get("full").getAsBoolean();
        Set<List<Object>> seen = new LinkedHashSet<>();
        List<BinaryRow> partitions = new ArrayList<>();
        List<Integer> buckets = new ArrayList<>();
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit ds = (DataSplit) split;
            if (seen.add(List.of(ds.partition(), ds.bucket()))) {
                partitions.add(ds.partition());
                buckets.add(ds.bucket());
            }
        }
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = (BatchTableWrite) builder.newWrite().withIOManager(ioManager);
                BatchTableCommit commit = builder.newCommit()) {
            for (int i = 0; i < partitions.size(); i++) {
                write.compact(partitions.get(i), buckets.get(i), full);
            }
            List<CommitMessage> messages = write.prepareCommit();
            commit.commit(messages);
        }
        JsonObject answer = latest(table);
        answer.addProperty("buckets", partitions.size());
        return answer;
    }

    /**
     * A streaming read (ReadBuilder.newStreamScan) with the command's options (scan.mode, scan.snapshot-id,
     * ...): every plan until the scan's next snapshot is past the latest one; rows with their kinds, and
     * the snapshot each plan came from under "_snapshot".
     */
    private JsonObject stream(JsonObject command) throws Exception {
        Table table = table(command, "");
        Long latest = ((FileStoreTable) table).snapshotManager().latestSnapshotId();
        ReadBuilder builder = table.newReadBuilder();
        RowType type = builder.readType();
        StreamTableScan scan = builder.newStreamScan();
        JsonArray rows = new JsonArray();
        for (int guard = 0; guard < 10_000; guard++) {
            List<Split> splits = scan.plan().splits();
            Long next = scan.checkpoint();
            long from = next == null ? -1 : next - 1;
            try (RecordReader<InternalRow> reader = builder.newRead().createReader(splits)) {
                reader.forEachRemaining(
                        row -> {
                            JsonObject json = rowJson(row, type);
                            json.addProperty("_kind", row.getRowKind().shortString());
                            json.addProperty("_snapshot", from);
                            rows.add(json);
                        });
            }
            if (latest == null || (next != null && next > latest)) {
                break;
            }
        }
        JsonObject answer = new JsonObject();
        answer.add("rows", rows);
        return answer;
    }

    /**
     * Schema changes: [{"add": name, "type": sql}, {"rename": name, "to": new}, {"drop": name},
     * {"default": name, "value": text or null}, {"set": option, "value": text}, {"reset": option}].
     */
    private JsonObject alter(JsonObject command) throws Exception {
        List<SchemaChange> changes = new ArrayList<>();
        for (JsonElement e : command.getAsJsonArray("changes")) {
            JsonObject c = e.getAsJsonObject();
            if (c.has("add")) {
                changes.add(
                        SchemaChange.addColumn(
                                c.get("add").getAsString(),
                                DataTypeJsonParser.parseAtomicTypeSQLString(
                                        c.get("type").getAsString())));
            } else if (c.has("rename")) {
                changes.add(
                        SchemaChange.renameColumn(
                                c.get("rename").getAsString(), c.get("to").getAsString()));
            } else if (c.has("drop")) {
                changes.add(SchemaChange.dropColumn(c.get("drop").getAsString()));
            } else if (c.has("default")) {
                JsonElement value = c.get("value");
                changes.add(
                        SchemaChange.updateColumnDefaultValue(
                                new String[] {c.get("default").getAsString()},
                                value == null || value.isJsonNull() ? null : value.getAsString()));
            } else if (c.has("set")) {
                // a table option: {"set": key, "value": text}
                changes.add(SchemaChange.setOption(c.get("set").getAsString(), c.get("value").getAsString()));
            } else if (c.has("reset")) {
                changes.add(SchemaChange.removeOption(c.get("reset").getAsString()));
            } else {
                throw new IllegalArgumentException("unknown schema change: " + c);
            }
        }
        Identifier id = Identifier.fromString(command.get("table").getAsString());
        catalog(command).alterTable(id, changes, false);
        return new JsonObject();
    }

    // ---- tags, branches, expiry, rollback ----

    /** {"action": "create", "name": n, "id": snapshot id or null (latest)} or {"action": "delete", "name": n}. */
    private JsonObject tag(JsonObject command) throws Exception {
        Table table = table(command, "");
        String name = command.get("name").getAsString();
        String action = command.get("action").getAsString();
        if ("create".equals(action)) {
            if (command.has("id") && !command.get("id").isJsonNull()) {
                table.createTag(name, command.get("id").getAsLong());
            } else {
                table.createTag(name);
            }
        } else if ("delete".equals(action)) {
            table.deleteTag(name);
        } else {
            throw new IllegalArgumentException("unknown tag action: " + action);
        }
        return new JsonObject();
    }

    /**
     * {"action": "create", "name": b, "tag": t or absent} (an empty branch on the latest schema without a
     * tag), "delete", or "fast_forward" (the main branch becomes the branch). Write and read a branch as
     * table "db.t$branch_b".
     */
    private JsonObject branch(JsonObject command) throws Exception {
        Table table = table(command, "");
        String name = command.get("name").getAsString();
        String action = command.get("action").getAsString();
        switch (action) {
            case "create":
                if (command.has("tag") && !command.get("tag").isJsonNull()) {
                    table.createBranch(name, command.get("tag").getAsString());
                } else {
                    table.createBranch(name);
                }
                break;
            case "delete":
                table.deleteBranch(name);
                break;
            case "fast_forward":
                table.fastForward(name);
                break;
            default:
                throw new IllegalArgumentException("unknown branch action: " + action);
        }
        return new JsonObject();
    }

    /** ExpireSnapshots with retain_min / retain_max and a time retention (default 0: any age expires). */
    private JsonObject expire(JsonObject command) throws Exception {
        Table table = table(command, "");
        ExpireConfig.Builder config = ExpireConfig.builder();
        if (command.has("retain_min")) {
            config.snapshotRetainMin(command.get("retain_min").getAsInt());
        }
        if (command.has("retain_max")) {
            config.snapshotRetainMax(command.get("retain_max").getAsInt());
        }
        long retainMs = command.has("time_retain_ms") ? command.get("time_retain_ms").getAsLong() : 0L;
        config.snapshotTimeRetain(java.time.Duration.ofMillis(retainMs));
        int expired = table.newExpireSnapshots().config(config.build()).expire();
        JsonObject answer = new JsonObject();
        answer.addProperty("expired", expired);
        return answer;
    }

    /** Table.rollbackTo(snapshot "id") or rollbackTo("tag"). */
    private JsonObject rollback(JsonObject command) throws Exception {
        Table table = table(command, "");
        if (command.has("tag") && !command.get("tag").isJsonNull()) {
            table.rollbackTo(command.get("tag").getAsString());
        } else {
            table.rollbackTo(command.get("id").getAsLong());
        }
        return latest(table);
    }

    /** The snapshot ids on storage (earliest to latest) and the tag names. */
    private JsonObject snapshots(JsonObject command) throws Exception {
        FileStoreTable table = (FileStoreTable) table(command, "");
        JsonArray ids = new JsonArray();
        java.util.Iterator<org.apache.paimon.Snapshot> it = table.snapshotManager().snapshots();
        while (it.hasNext()) {
            ids.add(it.next().id());
        }
        JsonArray tags = new JsonArray();
        for (String t : table.tagManager().allTagNames()) {
            tags.add(t);
        }
        JsonObject answer = new JsonObject();
        answer.add("ids", ids);
        answer.add("tags", tags);
        return answer;
    }

    private JsonObject latest(Table table) throws Exception {
        JsonObject answer = new JsonObject();
        FileStoreTable fresh = (FileStoreTable) table;
        Long id = fresh.snapshotManager().latestSnapshotId();
        answer.add("snapshot", id == null ? JsonNull.INSTANCE : new JsonPrimitive(id));
        return answer;
    }

    // ---- value conversion ----

    private static List<String> strings(JsonObject command, String key) {
        List<String> out = new ArrayList<>();
        if (command.has(key)) {
            for (JsonElement e : command.getAsJsonArray(key)) {
                out.add(e.getAsString());
            }
        }
        return out;
    }

    private static JsonElement toJson(Object value, DataType type) {
        if (value == null) {
            return JsonNull.INSTANCE;
        }
        switch (type.getTypeRoot()) {
            case CHAR:
            case VARCHAR:
                return new JsonPrimitive(value.toString());
            case BOOLEAN:
                return new JsonPrimitive((Boolean) value);
            case TINYINT:
            case SMALLINT:
            case INTEGER:
            case BIGINT:
            case FLOAT:
            case DOUBLE:
                return new JsonPrimitive((Number) value);
            case DECIMAL:
                return new JsonPrimitive(((Decimal) value).toBigDecimal().toPlainString());
            case DATE:
                return new JsonPrimitive(LocalDate.ofEpochDay((Integer) value).toString());
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                Timestamp ts = (Timestamp) value;
                return new JsonPrimitive(
                        ts.getMillisecond() * 1000L + ts.getNanoOfMillisecond() / 1000);
            case BINARY:
            case VARBINARY:
                return new JsonPrimitive(Base64.getEncoder().encodeToString((byte[]) value));
            case ROW:
                return rowJson((InternalRow) value, (RowType) type);
            case ARRAY:
                DataType element = ((ArrayType) type).getElementType();
                return arrayJson((InternalArray) value, element);
            case MAP:
                // A list of [key, value] pairs (keys need not be strings), as pyarrow's to_pylist gives.
                MapType mt = (MapType) type;
                InternalMap map = (InternalMap) value;
                JsonArray keys = arrayJson(map.keyArray(), mt.getKeyType());
                JsonArray values = arrayJson(map.valueArray(), mt.getValueType());
                JsonArray pairs = new JsonArray();
                for (int i = 0; i < keys.size(); i++) {
                    JsonArray pair = new JsonArray();
                    pair.add(keys.get(i));
                    pair.add(values.get(i));
                    pairs.add(pair);
                }
                return pairs;
            default:
                return new JsonPrimitive(String.valueOf(value));
        }
    }

    private static JsonObject rowJson(InternalRow row, RowType type) {
        JsonObject json = new JsonObject();
        for (int i = 0; i < type.getFieldCount(); i++) {
            Object v = InternalRow.createFieldGetter(type.getTypeAt(i), i).getFieldOrNull(row);
            json.add(type.getFields().get(i).name(), toJson(v, type.getTypeAt(i)));
        }
        return json;
    }

    private static JsonArray arrayJson(InternalArray array, DataType element) {
        InternalArray.ElementGetter getter = InternalArray.createElementGetter(element);
        JsonArray out = new JsonArray();
        for (int i = 0; i < array.size(); i++) {
            out.add(toJson(getter.getElementOrNull(array, i), element));
        }
        return out;
    }

    static Object fromJson(JsonElement value, DataType type) {
        if (value == null || value.isJsonNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(value.getAsString());
            case BOOLEAN:
                return value.getAsBoolean();
            case TINYINT:
                return value.getAsByte();
            case SMALLINT:
                return value.getAsShort();
            case INTEGER:
                return value.getAsInt();
            case BIGINT:
                return value.getAsLong();
            case FLOAT:
                return value.getAsFloat();
            case DOUBLE:
                return value.getAsDouble();
            case DECIMAL:
                DecimalType dt = (DecimalType) type;
                return Decimal.fromBigDecimal(
                        new BigDecimal(value.getAsString()), dt.getPrecision(), dt.getScale());
            case DATE:
                return (int) LocalDate.parse(value.getAsString()).toEpochDay();
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                long micros = value.getAsLong();
                return Timestamp.fromMicros(micros);
            case BINARY:
            case VARBINARY:
                return Base64.getDecoder().decode(value.getAsString());
            case ROW:
                RowType rt = (RowType) type;
                JsonObject obj = value.getAsJsonObject();
                GenericRow nested = new GenericRow(rt.getFieldCount());
                for (int i = 0; i < rt.getFieldCount(); i++) {
                    DataField f = rt.getFields().get(i);
                    nested.setField(i, fromJson(obj.get(f.name()), f.type()));
                }
                return nested;
            case ARRAY:
                DataType element = ((ArrayType) type).getElementType();
                JsonArray items = value.getAsJsonArray();
                Object[] out = new Object[items.size()];
                for (int i = 0; i < out.length; i++) {
                    out[i] = fromJson(items.get(i), element);
                }
                return new GenericArray(out);
            case MAP:
                MapType mt = (MapType) type;
                Map<Object, Object> entries = new java.util.LinkedHashMap<>();
                for (JsonElement p : value.getAsJsonArray()) {
                    JsonArray pair = p.getAsJsonArray();
                    entries.put(
                            fromJson(pair.get(0), mt.getKeyType()),
                            fromJson(pair.get(1), mt.getValueType()));
                }
                return new GenericMap(entries);
            default:
                throw new IllegalArgumentException("unsupported type in write: " + type);
        }
    }

    private Harness() throws Exception {
        java.nio.file.Path spill = java.nio.file.Files.createTempDirectory("lsmlake-harness");
        spill.toFile().deleteOnExit();
        this.ioManager = IOManager.create(spill.toString());
    }
}
