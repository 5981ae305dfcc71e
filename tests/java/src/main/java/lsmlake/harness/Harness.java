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
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DecimalType;
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
        return readAll(table);
    }

    private JsonObject systemTable(JsonObject command, String name) throws Exception {
        return readAll(table(command, "$" + name));
    }

    private static JsonObject readAll(Table table) throws Exception {
        ReadBuilder builder = table.newReadBuilder();
        RowType type = builder.readType();
        List<InternalRow.FieldGetter> getters = new ArrayList<>();
        for (int i = 0; i < type.getFieldCount(); i++) {
            getters.add(InternalRow.createFieldGetter(type.getTypeAt(i), i));
        }
        List<Split> splits = builder.newScan().plan().splits();
        JsonArray rows = new JsonArray();
        try (RecordReader<InternalRow> reader = builder.newRead().createReader(splits)) {
            reader.forEachRemaining(
                    row -> {
                        JsonObject json = new JsonObject();
                        json.addProperty("_kind", row.getRowKind().shortString());
                        for (int i = 0; i < getters.size(); i++) {
                            json.add(
                                    type.getFields().get(i).name(),
                                    toJson(getters.get(i).getFieldOrNull(row), type.getTypeAt(i)));
                        }
                        rows.add(json);
                    });
        }
        JsonObject answer = new JsonObject();
        answer.add("rows", rows);
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
        try (BatchTableWrite write = (BatchTableWrite) builder.newWrite().withIOManager(ioManager);
                BatchTableCommit commit = builder.newCommit()) {
            for (JsonElement e : command.getAsJsonArray("rows")) {
                JsonObject json = e.getAsJsonObject();
                RowKind kind =
                        json.has("_kind")
                                ? RowKind.fromShortString(json.get("_kind").getAsString())
                                : RowKind.INSERT;
                GenericRow row = new GenericRow(kind, type.getFieldCount());
                for (int i = 0; i < type.getFieldCount(); i++) {
                    DataField field = type.getFields().get(i);
                    row.setField(i, fromJson(json.get(field.name()), field.type()));
                }
                write.write(row);
            }
            commit.commit(write.prepareCommit());
        }
        return latest(table);
    }

    private JsonObject compact(JsonObject command) throws Exception {
        Table table = table(command, "");
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
                write.compact(partitions.get(i), buckets.get(i), true);
            }
            List<CommitMessage> messages = write.prepareCommit();
            commit.commit(messages);
        }
        JsonObject answer = latest(table);
        answer.addProperty("buckets", partitions.size());
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
            default:
                return new JsonPrimitive(String.valueOf(value));
        }
    }

    private static Object fromJson(JsonElement value, DataType type) {
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
