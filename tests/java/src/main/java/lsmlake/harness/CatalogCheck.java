package lsmlake.harness;

import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.options.Options;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowType;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Opens a catalog with the given options (JDBC or REST in the tests), lists every database and table,
 * reads the tables named in "read", and writes (id BIGINT primary key, v STRING) rows to the tables in
 * "write" (creating them first when "create" is true). Argument: a JSON file; prints one JSON object.
 */
public final class CatalogCheck {

    private CatalogCheck() {}

    public static void main(String[] args) throws Exception {
        JsonObject spec =
                JsonParser.parseString(
                                new String(Files.readAllBytes(Paths.get(args[0])), StandardCharsets.UTF_8))
                        .getAsJsonObject();
        Options options = new Options();
        for (Map.Entry<String, JsonElement> e : spec.getAsJsonObject("options").entrySet()) {
            options.set(e.getKey(), e.getValue().getAsString());
        }
        JsonObject out = new JsonObject();
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options))) {
            if (spec.has("write")) {
                for (JsonElement w : spec.getAsJsonArray("write")) {
                    write(catalog, w.getAsJsonObject());
                }
            }
            JsonObject tables = new JsonObject();
            for (String db : catalog.listDatabases()) {
                JsonArray names = new JsonArray();
                for (String t : catalog.listTables(db)) {
                    names.add(t);
                }
                tables.add(db, names);
            }
            out.add("tables", tables);
            JsonObject rows = new JsonObject();
            if (spec.has("read")) {
                for (JsonElement r : spec.getAsJsonArray("read")) {
                    rows.add(r.getAsString(), read(catalog.getTable(Identifier.fromString(r.getAsString()))));
                }
            }
            out.add("rows", rows);
        }
        System.out.println(new Gson().toJson(out));
    }

    private static void write(Catalog catalog, JsonObject w) throws Exception {
        Identifier id = Identifier.fromString(w.get("table").getAsString());
        if (w.has("create") && w.get("create").getAsBoolean()) {
            catalog.createDatabase(id.getDatabaseName(), true);
            Schema schema =
                    Schema.newBuilder()
                            .column("id", DataTypes.BIGINT().notNull())
                            .column("v", DataTypes.STRING())
                            .primaryKey("id")
                            .option("bucket", "1")
                            .build();
            catalog.createTable(id, schema, false);
        }
        Table table = catalog.getTable(id);
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = builder.newWrite();
                BatchTableCommit commit = builder.newCommit()) {
            for (JsonElement row : w.getAsJsonArray("rows")) {
                JsonArray r = row.getAsJsonArray();
                write.write(GenericRow.of(r.get(0).getAsLong(), BinaryString.fromString(r.get(1).getAsString())));
            }
            commit.commit(write.prepareCommit());
        }
    }

    private static JsonArray read(Table table) throws Exception {
        RowType type = table.rowType();
        ReadBuilder builder = table.newReadBuilder();
        List<InternalRow.FieldGetter> getters = new ArrayList<>();
        for (int i = 0; i < type.getFieldCount(); i++) {
            getters.add(InternalRow.createFieldGetter(type.getTypeAt(i), i));
        }
        JsonArray rows = new JsonArray();
        builder.newRead()
                .createReader(builder.newScan().plan())
                .forEachRemaining(
                        row -> {
                            JsonArray r = new JsonArray();
                            for (InternalRow.FieldGetter g : getters) {
                                Object v = g.getFieldOrNull(row);
                                r.add(v == null ? null : v.toString());
                            }
                            rows.add(r);
                        });
        return rows;
    }
}
