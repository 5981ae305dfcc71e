package lsmlake.harness;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.options.Options;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.types.DataTypeJsonParser;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Creates one table the way Paimon's Spark catalog turns a CREATE TABLE into a schema: each column with its
 * type, comment and default value text (Schema.Builder#column(name, type, description, defaultValue)).
 *
 * <p>Argument: a JSON file {"warehouse", "table", "fields": [[name, type, comment|null, default|null]],
 * "primary_key": [...], "partition_keys": [...], "options": {...}}. Prints {"ok": true} when created.
 */
public final class CreateTableCheck {

    private CreateTableCheck() {}

    public static void main(String[] args) throws Exception {
        String text = new String(Files.readAllBytes(Paths.get(args[0])), StandardCharsets.UTF_8);
        JsonObject spec = JsonParser.parseString(text).getAsJsonObject();
        Options options = new Options();
        options.set("warehouse", spec.get("warehouse").getAsString());
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options))) {
            Identifier id = Identifier.fromString(spec.get("table").getAsString());
            catalog.createDatabase(id.getDatabaseName(), true);
            Schema.Builder schema = Schema.newBuilder();
            for (JsonElement f : spec.getAsJsonArray("fields")) {
                JsonArray column = f.getAsJsonArray();
                schema.column(
                        column.get(0).getAsString(),
                        DataTypeJsonParser.parseAtomicTypeSQLString(column.get(1).getAsString()),
                        column.get(2).isJsonNull() ? null : column.get(2).getAsString(),
                        column.get(3).isJsonNull() ? null : column.get(3).getAsString());
            }
            schema.primaryKey(strings(spec, "primary_key"));
            schema.partitionKeys(strings(spec, "partition_keys"));
            if (spec.has("options")) {
                for (Map.Entry<String, JsonElement> e : spec.getAsJsonObject("options").entrySet()) {
                    schema.option(e.getKey(), e.getValue().getAsString());
                }
            }
            catalog.createTable(id, schema.build(), false);
        }
        System.out.println("{\"ok\": true}");
    }

    private static List<String> strings(JsonObject spec, String key) {
        List<String> out = new ArrayList<>();
        if (spec.has(key)) {
            for (JsonElement e : spec.getAsJsonArray(key)) {
                out.add(e.getAsString());
            }
        }
        return out;
    }
}
