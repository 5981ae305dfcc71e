package lsmlake.harness;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.TableRead;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowType;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Times Java Paimon on the scenarios of {@code python -m bench}, in one JVM: JSON commands on stdin, one
 * JSON answer line each on stdout ({"ok": true, ...} or {"ok": false, "error": ...}).
 *
 * <p>The bench hands its data over as little-endian column files (id.i64, name.off + name.bin, amount.f64,
 * qty.i32, ts.i64), loaded into arrays before any timer starts. Each timed step is measured with
 * System.nanoTime inside the JVM and preceded by an untimed warm-up (the same read, or a small write into
 * a scratch table); "warmup" runs every scenario once on a small table before the first timed step.
 */
public final class BenchDriver {

    private static final Gson GSON = new GsonBuilder().serializeNulls().create();
    private static final String TABLE = "db.t";
    private static final int SCRATCH_ROWS = 1000;

    private final Map<String, Columns> datasets = new HashMap<>();
    private final Map<String, Catalog> catalogs = new HashMap<>();
    private final IOManager ioManager;

    /** One data set of the bench's schema, column by column. */
    private static final class Columns {
        final long[] id;
        final int[] nameOffsets;
        final byte[] nameBytes;
        final double[] amount;
        final int[] qty;
        final long[] ts;

        Columns(Path dir) throws Exception {
            id = longs(dir.resolve("id.i64"));
            nameOffsets = ints(dir.resolve("name.off"));
            nameBytes = Files.readAllBytes(dir.resolve("name.bin"));
            amount = doubles(dir.resolve("amount.f64"));
            qty = ints(dir.resolve("qty.i32"));
            ts = longs(dir.resolve("ts.i64"));
            int n = id.length;
            if (nameOffsets.length != n + 1 || amount.length != n || qty.length != n || ts.length != n) {
                throw new IllegalArgumentException("column files of " + dir + " differ in length");
            }
        }

        int size() {
            return id.length;
        }

        GenericRow row(int i) {
            int start = nameOffsets[i];
            return GenericRow.of(
                    id[i],
                    BinaryString.fromBytes(nameBytes, start, nameOffsets[i + 1] - start),
                    amount[i],
                    qty[i],
                    ts[i]);
        }

        private static ByteBuffer buffer(Path path) throws Exception {
            return ByteBuffer.wrap(Files.readAllBytes(path)).order(ByteOrder.LITTLE_ENDIAN);
        }

        private static long[] longs(Path path) throws Exception {
            ByteBuffer b = buffer(path);
            long[] out = new long[b.remaining() / 8];
            b.asLongBuffer().get(out);
            return out;
        }

        private static int[] ints(Path path) throws Exception {
            ByteBuffer b = buffer(path);
            int[] out = new int[b.remaining() / 4];
            b.asIntBuffer().get(out);
            return out;
        }

        private static double[] doubles(Path path) throws Exception {
            ByteBuffer b = buffer(path);
            double[] out = new double[b.remaining() / 8];
            b.asDoubleBuffer().get(out);
            return out;
        }
    }

    /** What a read consumed: row count, sum of ids, compensated sum of amounts, and every other column. */
    private static final class Checksum {
        long rows;
        long idSum;
        double amountSum;
        double amountCompensation;
        long touched;

        void add(InternalRow row) {
            rows++;
            idSum += row.getLong(0);
            double x = row.getDouble(2);
            double t = amountSum + x;
            // Neumaier's compensated sum: the rounded total matches pyarrow's for any row order
            amountCompensation += Math.abs(amountSum) >= Math.abs(x) ? (amountSum - t) + x : (x - t) + amountSum;
            amountSum = t;
            touched += row.getString(1).getSizeInBytes() + row.getInt(3) + (row.getLong(4) & 0xff);
        }

        JsonObject json() {
            JsonObject o = new JsonObject();
            o.addProperty("rows", rows);
            o.addProperty("id_sum", idSum);
            o.addProperty("amount_sum", amountSum + amountCompensation);
            o.addProperty("touched", touched);
            return o;
        }
    }

    private BenchDriver() throws Exception {
        Path spill = Files.createTempDirectory("lsmlake-bench-java");
        spill.toFile().deleteOnExit();
        this.ioManager = IOManager.create(spill.toString());
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(new PrintStream(System.err, true, StandardCharsets.UTF_8));
        BenchDriver driver = new BenchDriver();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonObject command = JsonParser.parseString(line).getAsJsonObject();
            String op = command.get("op").getAsString();
            if (op.equals("quit")) {
                break;
            }
            JsonObject answer;
            try {
                answer = driver.dispatch(op, command);
                answer.addProperty("ok", true);
            } catch (Throwable e) {
                answer = new JsonObject();
                answer.addProperty("ok", false);
                answer.addProperty("error", op + ": " + e);
                e.printStackTrace();
            }
            out.println(GSON.toJson(answer));
        }
        driver.ioManager.close();
    }

    private JsonObject dispatch(String op, JsonObject command) throws Exception {
        switch (op) {
            case "load":
                Columns columns = new Columns(Path.of(command.get("dir").getAsString()));
                datasets.put(command.get("name").getAsString(), columns);
                JsonObject loaded = new JsonObject();
                loaded.addProperty("rows", columns.size());
                loaded.addProperty("paimon_version", Catalog.class.getPackage().getImplementationVersion());
                return loaded;
            case "warmup":
                return warmup(command);
            case "write":
                return write(command);
            case "read":
                return read(command);
            case "compact":
                return compact(command);
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    // ---- tables ----

    private Catalog catalog(String warehouse) {
        return catalogs.computeIfAbsent(
                warehouse,
                w -> {
                    Options options = new Options();
                    options.set("warehouse", w);
                    return CatalogFactory.createCatalog(CatalogContext.create(options));
                });
    }

    /** The bench's 4-bucket primary-key table, created if absent: the options lsmlake's tables get. */
    private Table table(String warehouse, String name, boolean dv) throws Exception {
        Catalog catalog = catalog(warehouse);
        Identifier id = Identifier.fromString(name);
        catalog.createDatabase(id.getDatabaseName(), true);
        Schema.Builder schema =
                Schema.newBuilder()
                        .column("id", DataTypes.BIGINT().notNull())
                        .column("name", DataTypes.STRING())
                        .column("amount", DataTypes.DOUBLE())
                        .column("qty", DataTypes.INT())
                        .column("ts", DataTypes.BIGINT())
                        .primaryKey("id")
                        .option("bucket", "4")
                        .option("deletion-vectors.enabled", Boolean.toString(dv));
        if (!dv) {
            schema.option("write-only", "true"); // level 0 only: merge on read
        }
        catalog.createTable(id, schema.build(), true);
        return catalog.getTable(id);
    }

    private Columns dataset(JsonElement name) {
        Columns c = datasets.get(name.getAsString());
        if (c == null) {
            throw new IllegalArgumentException("data set " + name + " was not loaded");
        }
        return c;
    }

    // ---- steps ----

    /** One commit of the first {@code limit} rows of {@code data}. */
    private void commit(Table table, Columns data, int limit) throws Exception {
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = (BatchTableWrite) builder.newWrite().withIOManager(ioManager);
                BatchTableCommit commit = builder.newCommit()) {
            int n = Math.min(limit, data.size());
            for (int i = 0; i < n; i++) {
                write.write(data.row(i));
            }
            commit.commit(write.prepareCommit());
        }
    }

    private Checksum scan(Table table, JsonElement filter) throws Exception {
        ReadBuilder builder = table.newReadBuilder();
        if (filter != null && !filter.isJsonNull()) {
            builder.withFilter(predicate(table.rowType(), filter.getAsJsonArray()));
        }
        List<Split> splits = builder.newScan().plan().splits();
        TableRead read = builder.newRead().withIOManager(ioManager).executeFilter();
        Checksum sum = new Checksum();
        try (RecordReader<InternalRow> reader = read.createReader(splits)) {
            RecordReader.RecordIterator<InternalRow> batch;
            while ((batch = reader.readBatch()) != null) {
                InternalRow row;
                while ((row = batch.next()) != null) {
                    sum.add(row);
                }
                batch.releaseBatch();
            }
        }
        return sum;
    }

    private static Predicate predicate(RowType type, JsonArray filter) {
        PredicateBuilder pb = new PredicateBuilder(type);
        switch (filter.get(0).getAsString()) {
            case "between":
                return pb.between(pb.indexOf("id"), filter.get(1).getAsLong(), filter.get(2).getAsLong());
            case "gt":
                return pb.greaterThan(pb.indexOf("amount"), filter.get(1).getAsDouble());
            default:
                throw new IllegalArgumentException("unknown filter " + filter);
        }
    }

    private void compactAll(Table table) throws Exception {
        Table compacting = table.copy(Map.of("write-only", "false"));
        int buckets = ((FileStoreTable) compacting).coreOptions().bucket();
        BatchWriteBuilder builder = compacting.newBatchWriteBuilder();
        try (BatchTableWrite write = (BatchTableWrite) builder.newWrite().withIOManager(ioManager);
                BatchTableCommit commit = builder.newCommit()) {
            for (int b = 0; b < buckets; b++) {
                write.compact(BinaryRow.EMPTY_ROW, b, true);
            }
            commit.commit(write.prepareCommit());
        }
    }

    /** An untimed small write into the scratch warehouse (lsmlake and pypaimon warm each write the same way). */
    private void warmWrite(JsonObject command) throws Exception {
        Columns first = dataset(command.getAsJsonArray("datasets").get(0));
        commit(table(command.get("scratch").getAsString(), "db.warmup", false), first, SCRATCH_ROWS);
    }

    /** {"warehouse", "dv", "datasets": [names], "scratch"}: one timed commit per data set. */
    private JsonObject write(JsonObject command) throws Exception {
        Table table = table(command.get("warehouse").getAsString(), TABLE, command.get("dv").getAsBoolean());
        List<Columns> data = new ArrayList<>();
        for (JsonElement name : command.getAsJsonArray("datasets")) {
            data.add(dataset(name));
        }
        warmWrite(command);
        long start = System.nanoTime();
        for (Columns c : data) {
            commit(table, c, Integer.MAX_VALUE);
        }
        return seconds(start);
    }

    /** {"warehouse", "filter"}: a warm-up read, then the timed read (plan + every row). */
    private JsonObject read(JsonObject command) throws Exception {
        Table table = catalog(command.get("warehouse").getAsString()).getTable(Identifier.fromString(TABLE));
        JsonElement filter = command.get("filter");
        scan(table, filter);
        long start = System.nanoTime();
        Checksum sum = scan(table, filter);
        JsonObject answer = seconds(start);
        for (Map.Entry<String, JsonElement> e : sum.json().entrySet()) {
            answer.add(e.getKey(), e.getValue());
        }
        return answer;
    }

    /** {"warehouse", "datasets", "scratch"}: a timed full compaction of every bucket, one commit. */
    private JsonObject compact(JsonObject command) throws Exception {
        Table table = catalog(command.get("warehouse").getAsString()).getTable(Identifier.fromString(TABLE));
        warmWrite(command);
        long start = System.nanoTime();
        compactAll(table);
        JsonObject answer = seconds(start);
        Table after = catalog(command.get("warehouse").getAsString()).getTable(Identifier.fromString(TABLE));
        answer.add("check", scan(after, null).json());
        answer.addProperty(
                "commit_kind", ((FileStoreTable) after).snapshotManager().latestSnapshot().commitKind().name());
        return answer;
    }

    /** {"work", "rows", "datasets": [base, upserts...]}: every scenario once, untimed, on small tables. */
    private JsonObject warmup(JsonObject command) throws Exception {
        long start = System.nanoTime();
        int rows = command.get("rows").getAsInt();
        JsonArray names = command.getAsJsonArray("datasets");
        JsonArray filters = command.getAsJsonArray("filters");
        for (boolean dv : new boolean[] {false, true}) {
            String warehouse = command.get("work").getAsString() + (dv ? "/dv" : "/mor");
            Table table = table(warehouse, TABLE, dv);
            for (int i = 0; i < names.size(); i++) {
                commit(table, dataset(names.get(i)), i == 0 ? rows : rows * 3 / 10);
            }
            scan(table, null);
            for (JsonElement f : filters) {
                scan(table, f);
            }
            if (!dv) {
                compactAll(table);
            }
        }
        return seconds(start);
    }

    private static JsonObject seconds(long start) {
        JsonObject answer = new JsonObject();
        answer.addProperty("seconds", (System.nanoTime() - start) / 1e9);
        return answer;
    }
}
