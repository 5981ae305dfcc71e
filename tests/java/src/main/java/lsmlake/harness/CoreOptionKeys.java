package lsmlake.harness;

import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;

import org.apache.paimon.CoreOptions;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.options.ConfigOption;
import org.apache.paimon.options.FallbackKey;

import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;

/**
 * Prints, as one JSON object on stdout, every public static ConfigOption of Java Paimon's CoreOptions
 * (found by reflection, so the list follows the Paimon on the classpath): its key, its fallback keys and
 * the field that declares it, with the Paimon version.
 */
public final class CoreOptionKeys {

    private CoreOptionKeys() {}

    public static void main(String[] args) throws Exception {
        JsonArray options = new JsonArray();
        for (Field field : CoreOptions.class.getFields()) {
            if (!Modifier.isStatic(field.getModifiers())
                    || !ConfigOption.class.isAssignableFrom(field.getType())) {
                continue;
            }
            ConfigOption<?> option = (ConfigOption<?>) field.get(null);
            JsonObject entry = new JsonObject();
            entry.addProperty("field", field.getName());
            entry.addProperty("key", option.key());
            JsonArray fallbacks = new JsonArray();
            for (FallbackKey fallback : option.fallbackKeys()) {
                fallbacks.add(fallback.getKey());
            }
            entry.add("fallback_keys", fallbacks);
            options.add(entry);
        }
        JsonObject answer = new JsonObject();
        Package p = Catalog.class.getPackage();
        String version = p == null ? null : p.getImplementationVersion();
        answer.addProperty("paimon_version", version == null ? "unknown" : version);
        answer.add("options", options);
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        out.println(new Gson().toJson(answer));
    }
}
