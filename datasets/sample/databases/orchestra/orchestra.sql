-- Sample database 'orchestra', file orchestra.sql: same schema as every file in this folder, different rows.
-- Written for baton's sample set; materialized into orchestra/<file>.sqlite by baton-data.

CREATE TABLE musician (
    musician_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    instrument TEXT,
    section TEXT,
    joined_year INTEGER,
    salary INTEGER
);

CREATE TABLE concert (
    concert_id INTEGER PRIMARY KEY,
    title TEXT,
    venue TEXT,
    city TEXT,
    concert_date TEXT,
    attendance INTEGER
);

CREATE TABLE performance (
    concert_id INTEGER NOT NULL REFERENCES concert (concert_id),
    musician_id INTEGER NOT NULL REFERENCES musician (musician_id),
    is_soloist INTEGER NOT NULL,
    PRIMARY KEY (concert_id, musician_id)
);

INSERT INTO musician VALUES (1, 'Jonas Novak', 'oboe', 'woodwinds', 2003, 39000);
INSERT INTO musician VALUES (2, 'Greta Kovac', 'horn', 'brass', 2017, 80500);
INSERT INTO musician VALUES (3, 'Greta Weiss', 'timpani', 'percussion', 2006, 61000);
INSERT INTO musician VALUES (4, 'Noor Moreau', 'timpani', 'percussion', 2017, 44000);
INSERT INTO musician VALUES (5, 'Ilse Weiss', 'violin', 'strings', 2019, 68500);
INSERT INTO musician VALUES (6, 'Samuel Ricci', 'horn', 'brass', 2002, 78500);
INSERT INTO musician VALUES (7, 'Ilse Brandt', 'horn', 'brass', 2018, 67500);
INSERT INTO musician VALUES (8, 'Samuel Novak', 'clarinet', 'woodwinds', 2006, 70500);
INSERT INTO musician VALUES (9, 'Maren Lindahl', 'horn', 'brass', 2014, 54500);
INSERT INTO musician VALUES (10, 'Noor Ricci', 'violin', 'strings', 2015, 66000);
INSERT INTO musician VALUES (11, 'Maren Kovac', 'viola', 'strings', 2020, 86500);
INSERT INTO musician VALUES (12, 'Dario Adeyemi', 'viola', 'strings', 1999, 41000);
INSERT INTO musician VALUES (13, 'Dario Haas', 'timpani', 'percussion', 2003, 83000);
INSERT INTO musician VALUES (14, 'Felix Weiss', 'trumpet', 'brass', 2017, 50000);

INSERT INTO concert VALUES (1, 'Summer Serenade', 'Konzerthaus', 'Vienna', '2023-05-14', 1640);
INSERT INTO concert VALUES (2, 'New Year Concert', 'Rudolfinum', 'Prague', '2023-11-28', 690);
INSERT INTO concert VALUES (3, 'New Year Concert', 'Konzerthaus', 'Vienna', '2023-04-16', 510);
INSERT INTO concert VALUES (4, 'Youth Showcase', 'Konzerthaus', 'Vienna', '2023-09-25', 770);
INSERT INTO concert VALUES (5, 'Mahler Cycle', 'Konzerthaus', 'Vienna', '2023-10-06', 790);
INSERT INTO concert VALUES (6, 'Chamber Night', 'Stadtcasino', 'Basel', '2023-10-13', 1760);
INSERT INTO concert VALUES (7, 'Mahler Cycle', 'Rudolfinum', 'Prague', '2023-04-06', 1420);
INSERT INTO concert VALUES (8, 'Mahler Cycle', 'Rudolfinum', 'Prague', '2023-06-16', 1810);

INSERT INTO performance VALUES (1, 3, 0);
INSERT INTO performance VALUES (1, 6, 0);
INSERT INTO performance VALUES (1, 7, 0);
INSERT INTO performance VALUES (1, 11, 1);
INSERT INTO performance VALUES (2, 2, 0);
INSERT INTO performance VALUES (2, 7, 0);
INSERT INTO performance VALUES (2, 14, 0);
INSERT INTO performance VALUES (3, 12, 0);
INSERT INTO performance VALUES (3, 13, 0);
INSERT INTO performance VALUES (4, 10, 0);
INSERT INTO performance VALUES (4, 11, 0);
INSERT INTO performance VALUES (4, 12, 0);
INSERT INTO performance VALUES (5, 1, 0);
INSERT INTO performance VALUES (5, 2, 0);
INSERT INTO performance VALUES (5, 6, 1);
INSERT INTO performance VALUES (5, 9, 0);
INSERT INTO performance VALUES (6, 4, 0);
INSERT INTO performance VALUES (6, 9, 0);
INSERT INTO performance VALUES (6, 14, 1);
INSERT INTO performance VALUES (7, 8, 0);
INSERT INTO performance VALUES (7, 12, 0);
INSERT INTO performance VALUES (7, 14, 0);
INSERT INTO performance VALUES (8, 5, 0);
INSERT INTO performance VALUES (8, 7, 0);
INSERT INTO performance VALUES (8, 8, 0);
INSERT INTO performance VALUES (8, 10, 1);
